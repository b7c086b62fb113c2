package agent

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkFirewallScrub hides 100k recorded secrets in a 4 KB feedback
// text, the registry's index built once (as in a run, where it is rebuilt
// only when a new secret is recorded), against strings.Replacer doing the
// same replacement.
func BenchmarkFirewallScrub(b *testing.B) {
	const n = 100_000
	var recs []any
	for i := range n {
		recs = append(recs, map[string]any{"_body": fmt.Sprintf("secret body number %d of the mailbox", i)})
	}
	text := strings.Repeat("Result: [{\"_body\" <Firewalled> \"id\" 1} ...] secret body number 4242 of the mailbox\n", 50)
	// scrubbing builds a scrubber with build, warms it up and measures it
	// on text, which must come back without the secret.
	scrubbing := func(build func() func(string) string) func(*testing.B) {
		return func(b *testing.B) {
			scrub := build()
			scrub("warm up")
			b.ReportAllocs()
			for b.Loop() {
				if out := scrub(text); strings.Contains(out, "4242") {
					b.Fatal("not scrubbed")
				}
			}
		}
	}
	b.Run("registry", scrubbing(func() func(string) string {
		sec := &secrets{}
		sec.collect(recs, false)
		return sec.scrub
	}))
	// the same text escaped (as an error quoting a printed value): the
	// escaped-form pass unescapes it
	escText := strings.ReplaceAll(text, `"`, `\"`)
	b.Run("registry-escaped", func(b *testing.B) {
		sec := &secrets{}
		sec.collect(recs, false)
		sec.collect(map[string]any{"_q": "quoted \"secret\" body"}, false)
		sec.scrub("warm up")
		b.ReportAllocs()
		for b.Loop() {
			if out := sec.scrub(escText); strings.Contains(out, "4242") {
				b.Fatal("not scrubbed")
			}
		}
	})
	b.Run("strings.Replacer", scrubbing(func() func(string) string {
		pairs := make([]string, 0, 2*n)
		for i := range n {
			pairs = append(pairs, fmt.Sprintf("secret body number %d of the mailbox", i), firewalledText)
		}
		return strings.NewReplacer(pairs...).Replace
	}))
	b.Run("collect+build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sec := &secrets{}
			sec.collect(recs, false)
			sec.scrub("x")
		}
	})
}

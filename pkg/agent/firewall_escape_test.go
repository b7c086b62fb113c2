package agent

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/lisp"
)

// escapeCanaries are firewalled strings that printers and encoders escape:
// JSON, a PEM body, a Windows path, CJK, tabs, a character beyond the BMP.
var escapeCanaries = []string{
	`{"token": "CANARY-j7\"q\"", "n": 1}`,
	"-----BEGIN KEY-----\nCANARYpem0body\tline\n-----END KEY-----",
	`C:\Users\canary\new\tmp\x41\u0041`,
	"秘密の合言葉CANARY秘密",
	"tab\tCANARY\tsep\r\nend<&>",
	"emoji😀CANARY😀\x01ctl",
}

// escapers are the escapings a secret meets on its way into a message.
var escapers = []struct {
	name string
	fn   func(string) string
}{
	{"pr-str", func(s string) string { return lisp.PrStr(s) }},
	{"pr-str vector", func(s string) string { return lisp.PrStr(lisp.NewVector([]lisp.Value{s})) }},
	{"json", func(s string) string { b, _ := json.Marshal(s); return string(b) }},
	{"json ascii", jsonASCII},
	{"go", strconv.Quote},
	{"go ascii", strconv.QuoteToASCII},
}

// jsonASCII encodes s as JSON with every non-ASCII character escaped (as
// some encoders do), characters beyond the BMP as surrogate pairs.
func jsonASCII(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r >= 0x7f:
			if r > 0xffff {
				r -= 0x10000
				b.WriteString("\\u" + strconv.FormatInt(int64(0xd800+(r>>10)), 16))
				b.WriteString("\\u" + strconv.FormatInt(int64(0xdc00+(r&0x3ff)), 16))
				continue
			}
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString("\\u" + strings.Repeat("0", 4-len(h)) + h)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// unescapeLevels returns text and what it reads as after one, two, ...
// levels of unescaping (Go's, JSON's and PTC-Lisp's escapes): the test
// detector's own decoder, independent of the scrubber's.
func unescapeLevels(text string) []string {
	out := []string{text}
	for range 8 {
		if !strings.Contains(text, `\`) {
			break
		}
		var b strings.Builder
		for i := 0; i < len(text); i++ {
			c := text[i]
			if c != '\\' || i+1 == len(text) {
				b.WriteByte(c)
				continue
			}
			i++
			switch e := text[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'u':
				if v, err := strconv.ParseUint(text[i+1:min(i+5, len(text))], 16, 32); err == nil && i+5 <= len(text) {
					b.WriteRune(rune(v))
					i += 4
					continue
				}
				b.WriteByte(e)
			case 'x':
				if v, err := strconv.ParseUint(text[i+1:min(i+3, len(text))], 16, 8); err == nil && i+3 <= len(text) {
					b.WriteByte(byte(v))
					i += 2
					continue
				}
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
		}
		text = b.String()
		out = append(out, text)
	}
	return out
}

// leakedEscaped reports whether text holds c raw or under any number of
// levels of escaping: any 12-byte piece of a long canary (or of the parts
// between its escapable characters), as leaked does.
func leakedEscaped(text, c string) bool {
	for _, u := range unescapeLevels(text) {
		if leaked(u, c) {
			return true
		}
		// a piece between characters that a decoder may render
		// differently (a surrogate pair decoded alone)
		for _, part := range strings.FieldsFunc(c, func(r rune) bool { return r < 0x20 || r > 0xffff }) {
			if len(part) >= 12 && leaked(u, part) {
				return true
			}
		}
	}
	return false
}

// TestFirewallScrubEscaped: a recorded secret is hidden under one to
// five levels of any mix of escapings, inside a message, and when a
// printer cut the escaped text short ("...").
func TestFirewallScrubEscaped(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range escapeCanaries {
		sec := &secrets{}
		sec.collect(map[string]any{"_s": c}, false)
		for range 200 {
			text := c
			var how []string
			for n := 1 + r.IntN(5); n > 0; n-- {
				e := escapers[r.IntN(len(escapers))]
				text = e.fn(text)
				how = append(how, e.name)
			}
			for _, msg := range []string{
				"Error: bad value " + text + " at 3",
				"Error: bad value " + text[:len(text)*(2+r.IntN(7))/10] + "...",
			} {
				out := sec.scrub(msg)
				if leakedEscaped(out, c) {
					t.Fatalf("%q under %v leaks:\n%s\nscrubbed:\n%s", c, how, msg, out)
				}
				if !strings.HasPrefix(out, "Error: bad value ") {
					t.Fatalf("scrub changed the message around the secret: %s", out)
				}
			}
		}
	}
}

// The escaped-form pass leaves public text alone, and a secret without
// escapable characters does not make it run.
func TestFirewallScrubEscapedKeepsPublicText(t *testing.T) {
	sec := &secrets{}
	sec.collect(map[string]any{"_s": `a"secret"value`, "_p": "plainsecret"}, false)
	for _, text := range []string{
		`Error: "C:\\Users\\ann" and "line\nbreak" stay`,
		`got ["a\"b" "x\\y"]`,
	} {
		if got := sec.scrub(text); got != text {
			t.Errorf("scrub(%q) = %q", text, got)
		}
	}
	if got := sec.scrub(`x \"a\\\"secret\\\"value\" y`); got != `x \"<Firewalled>\" y` {
		t.Errorf("got %q", got)
	}
}

// A firewalled value the registry never saw (built by the program) that
// fails validation, as a typed tool's "_" argument or as the agent's "_"
// output field: the message names the path and the kinds, not the value.
func TestFirewallValidationHidesValue(t *testing.T) {
	tool := FuncSig("(_key :int, n :int) -> :any", func(context.Context, map[string]any) (any, error) { return 1, nil })
	a := mustNew(t, Spec{Prompt: "Read", Signature: "{_tok :string}", Tools: map[string]Tool{"t": tool}})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(tool/t {:_key (str "CANARY-" "tool-key-1") :n 1})`),
		llmtest.Code(`(return {:_tok [(str "CANARY-" "ret-val-2")]})`).Expect(llmtest.LastUserContains("_key: expected integer, got string <Firewalled>")),
		llmtest.Code(`(return {:_tok "ok"})`).Expect(llmtest.LastUserContains("_tok: expected string, got list <Firewalled>")),
	)
	if err != nil {
		t.Fatal(err)
	}
	noLeak(t, m.Requests(), "CANARY-tool-key-1", "CANARY-ret-val-2")
}

// A long print line of CJK is cut on a character boundary: the prompt
// stays valid UTF-8 and the cut is marked.
func TestPrintLineCutValidUTF8(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Read"})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(println (apply str "x" (repeat 400 "秘")))`),
		llmtest.Code(`(return 1)`).Expect(llmtest.LastUserContains("... (truncated")),
	)
	if err != nil {
		t.Fatal(err)
	}
	for i, req := range m.Requests() {
		if text := llmtest.Transcript(req); !utf8.ValidString(text) {
			t.Fatalf("request %d is not valid UTF-8", i+1)
		}
	}
}

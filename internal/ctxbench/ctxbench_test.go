package ctxbench

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Both modes reach the same answer on every mission; PTC mode sends a small
// fraction of text mode's prompt bytes, and its prompt stays flat when the
// records grow tenfold while text mode's grows with them.
func TestModesAgreeAndPTCStaysFlat(t *testing.T) {
	ctx := context.Background()
	for _, m := range Missions() {
		t.Run(m.Name, func(t *testing.T) {
			res := map[string]Result{}
			for _, scale := range []int{1, 10} {
				for _, mode := range []Mode{PTC, Text} {
					r, err := Run(ctx, m, mode, scale)
					if err != nil {
						t.Fatal(err)
					}
					res[fmt.Sprint(mode, scale)] = r
				}
			}
			p1, t1, p10, t10 := res["ptc1"], res["text1"], res["ptc10"], res["text10"]
			norm := func(v any) any { n, _ := messages.FromJSON(v); return n }
			if !reflect.DeepEqual(norm(p1.Return), norm(t1.Return)) {
				t.Errorf("answers differ:\nptc  %v\ntext %v", p1.Return, t1.Return)
			}
			t.Logf("1×: ptc %d tokens (est.), text %d: %.1f%% fewer; 10×: ptc %d, text %d",
				p1.PromptTokens(), t1.PromptTokens(), 100*(1-float64(p1.PromptBytes)/float64(t1.PromptBytes)), p10.PromptTokens(), t10.PromptTokens())
			if p1.PromptBytes*10 > t1.PromptBytes {
				t.Errorf("PTC sends %d bytes, text %d: less than 90%% fewer", p1.PromptBytes, t1.PromptBytes)
			}
			if float64(p10.PromptBytes) > 1.05*float64(p1.PromptBytes) {
				t.Errorf("PTC prompt grew from %d to %d bytes with 10× the records", p1.PromptBytes, p10.PromptBytes)
			}
			if t10.PromptBytes < 9*t1.PromptBytes {
				t.Errorf("text prompt grew only from %d to %d bytes with 10× the records", t1.PromptBytes, t10.PromptBytes)
			}
		})
	}
}

// BenchmarkContext reports the estimated prompt tokens, requests and the
// largest request of each mission, mode and scale.
func BenchmarkContext(b *testing.B) {
	for _, m := range Missions() {
		for _, scale := range []int{1, 10} {
			for _, mode := range []Mode{PTC, Text} {
				b.Run(fmt.Sprintf("%s/%s/%dx", m.Name, mode, scale), func(b *testing.B) {
					var r Result
					for b.Loop() {
						var err error
						if r, err = Run(context.Background(), m, mode, scale); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(r.PromptTokens()), "prompt-tokens-est")
					b.ReportMetric(float64(r.Requests), "requests")
					b.ReportMetric(float64(r.LargestTokens()), "largest-request-tokens-est")
				})
			}
		}
	}
}

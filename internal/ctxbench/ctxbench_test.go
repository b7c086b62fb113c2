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
			t.Logf("1×: ptc %d tokens, text %d: %.2f%% fewer; 10×: ptc %d, text %d",
				p1.PromptTokens, t1.PromptTokens, 100*Saving(p1, t1), p10.PromptTokens, t10.PromptTokens)
			if Saving(p1, t1) < 0.975 {
				t.Errorf("PTC sends %d tokens, text %d: %.1f%% fewer, below 97.5%%", p1.PromptTokens, t1.PromptTokens, 100*Saving(p1, t1))
			}
			if float64(p10.PromptTokens) > 1.05*float64(p1.PromptTokens) {
				t.Errorf("PTC prompt grew from %d to %d tokens with 10× the records", p1.PromptTokens, p10.PromptTokens)
			}
			if t10.PromptTokens < 9*t1.PromptTokens {
				t.Errorf("text prompt grew only from %d to %d tokens with 10× the records", t1.PromptTokens, t10.PromptTokens)
			}
		})
	}
}

// BenchmarkContext reports the prompt tokens (o200k_base), requests and the
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
					b.ReportMetric(float64(r.PromptTokens), "prompt-tokens")
					b.ReportMetric(float64(r.Requests), "requests")
					b.ReportMetric(float64(r.LargestTokens), "largest-request-tokens")
				})
			}
		}
	}
}

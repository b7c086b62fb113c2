package agent

import (
	"context"
	"math"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

// The estimated cost of every model answer is summed over the turns and the
// sub-agents of a run, each model priced by its own prices.
func TestCostSummedOverSubAgents(t *testing.T) {
	cheap := llm.Prices{Input: 1, Output: 2, CacheRead: 0.1}
	dear := llm.Prices{Input: 10, Output: 20}
	sub := llmtest.New(llmtest.Code(`(return 7)`).WithUsage(1000, 100))
	parent := llmtest.New(
		llmtest.Code(`{:n (tool/helper {})}`).WithUsage(2000, 50),
		func() llmtest.Reply {
			r := llmtest.Code(`(return n)`).WithUsage(3000, 50)
			r.Usage.CacheReadTokens = 2000
			return r
		}(),
	)
	reg := llm.Registry{"dear": llm.WithPrices(sub, dear)}
	helper := mustNew(t, Spec{Name: "helper", Prompt: "Help", LLM: "dear"})
	a := mustNew(t, Spec{Name: "main", Prompt: "Go", Tools: map[string]Tool{"helper": helper.AsTool(ToolOptions{})}})
	st, err := a.Run(context.Background(), RunOptions{Model: llm.WithPrices(parent, cheap), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	want := (2000*1+50*2)/1e6 + (1000*1+2000*0.1+50*2)/1e6 + (1000*10+100*20)/1e6
	if math.Abs(st.Usage.CostUSD-want) > 1e-12 {
		t.Errorf("cost = %v, want %v", st.Usage.CostUSD, want)
	}
	if st.Usage.CacheReadTokens != 2000 || st.Usage.InputTokens != 6000 {
		t.Errorf("usage = %+v", st.Usage)
	}
	var turns float64
	for _, tr := range st.Trace {
		turns += tr.Usage.CostUSD
	}
	if math.Abs(turns-(2000*1+50*2)/1e6-(1000*1+2000*0.1+50*2)/1e6) > 1e-12 {
		t.Errorf("the turns' own costs sum to %v", turns)
	}
}

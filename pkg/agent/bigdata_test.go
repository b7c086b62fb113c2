package agent

import (
	"context"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

// A large tool result kept with def is usable in the next turns: the
// core use case of programmatic tool calling.
func TestDefKeepsLargeToolResultAcrossTurns(t *testing.T) {
	const n = 100_000
	recs := make([]any, n)
	for i := range recs {
		recs[i] = map[string]any{"id": int64(i), "name": "item", "score": int64(i % 7)}
	}
	list := Func(func(context.Context, map[string]any) (any, error) { return recs, nil })
	a := mustNew(t, Spec{Prompt: "Count", Signature: "{n :int, first :int}", Limits: Limits{MemoryLimit: 64 << 20},
		Tools: map[string]Tool{"list": list}})
	st, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(def xs (tool/list {}))
(count xs)`),
		llmtest.Code(`(take 2 xs)`).Expect(llmtest.LastUserContains("Result: 100000")),
		llmtest.Code(`(return {:n (count (filter #(= 3 (:score %)) xs)) :first (:id (first xs))})`).
			Expect(llmtest.LastUserContains(`Result: [{"id" 0 "name" "item" "score" 0} {"id" 1 "name" "item" "score" 1}]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if m.Calls() != 3 {
		t.Fatalf("%d model calls", m.Calls())
	}
	want := int64(0)
	for i := range n {
		if i%7 == 3 {
			want++
		}
	}
	ret := st.Return.(map[string]any)
	if ret["n"] != want || ret["first"] != int64(0) {
		t.Fatalf("return %v", ret)
	}
}

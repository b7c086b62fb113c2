package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestKeptToolResultAcrossTurns keeps a typed tool's result (decoded
// from its JSON) with def in turn 1 and changes one record in turn 2:
// the Step's memory holds the result itself (a *lisp.Kept, not a Go
// copy), and it and the changed vector (records kept beside the changed
// one) encode to the msgpack and JSON bytes of their Go data.
func TestKeptToolResultAcrossTurns(t *testing.T) {
	orders := make([]order, 50)
	for i := range orders {
		orders[i] = order{ID: i, Customer: fmt.Sprintf("c-%d", i%7), Status: "shipped", Total: float64(i) * 1.5, Note: "a\x00<b>"}
	}
	tool := Typed(func(context.Context, struct{}) ([]order, error) { return orders, nil })
	a := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"orders": tool}, Limits: Limits{MaxTurns: 3}})
	st, err, _ := run(t, a, RunOptions{},
		llmtest.Code(`(def kept (tool/orders))`),
		llmtest.Code(`(def edited (assoc-in kept [0 "status"] "open")) (return (count kept))`))
	if err != nil || st.Return != int64(len(orders)) {
		t.Fatalf("return %v, err %v", st.Return, err)
	}
	kept, ok := st.Memory["kept"].(*lisp.Kept)
	if !ok {
		t.Fatalf("memory kept is %T, want the decoded result kept as it is", st.Memory["kept"])
	}
	raw, err := json.Marshal(orders)
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	if err := messages.DecodeJSON(raw, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(kept.Go(), any(want)) {
		t.Fatalf("kept = %v, want %v", kept.Go(), want)
	}
	edited := make([]any, len(want))
	copy(edited, want)
	first := map[string]any{}
	for k, v := range want[0].(map[string]any) {
		first[k] = v
	}
	first["status"] = "open"
	edited[0] = first
	for name, plain := range map[string]any{"kept": want, "edited": edited} {
		got := st.Memory[name]
		gm, err1 := messages.Marshal(got)
		wm, err2 := messages.Marshal(plain)
		gj, err3 := json.Marshal(got)
		wj, err4 := json.Marshal(plain)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			t.Fatal(err1, err2, err3, err4)
		}
		if !bytes.Equal(gm, wm) || !bytes.Equal(gj, wj) {
			t.Errorf("memory %s encodes as\n%.300s\nwant\n%.300s", name, gj, wj)
		}
	}
}

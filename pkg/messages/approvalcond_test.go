package messages_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Meets errs on the side of asking (a call it cannot judge needs
// approval); Holds, which selects calls to decide at once, the other way
// (a call it cannot judge is not selected). Both agree on every call they
// can judge.
func TestApprovalCondMeetsAndHolds(t *testing.T) {
	args := map[string]any{"amount": int64(250), "order": map[string]any{"id": "A-1", "total": 99.5}, "note": "x"}
	cases := []struct {
		cond        *messages.ApprovalCond
		meets, hold bool
	}{
		{nil, true, true},
		{&messages.ApprovalCond{Arg: "amount", Op: ">", Value: int64(100)}, true, true},
		{&messages.ApprovalCond{Arg: "amount", Op: "<=", Value: 100.0}, false, false},
		{&messages.ApprovalCond{Arg: "amount", Op: ">=", Value: int64(250)}, true, true},
		{&messages.ApprovalCond{Arg: "amount", Op: "<", Value: 250}, false, false},
		{&messages.ApprovalCond{Arg: "order.total", Op: "<", Value: int64(100)}, true, true},
		{&messages.ApprovalCond{Arg: "order.id", Op: "=", Value: "A-1"}, true, true},
		{&messages.ApprovalCond{Arg: "order.id", Op: "!=", Value: "A-1"}, false, false},
		{&messages.ApprovalCond{Arg: "note", Op: ">", Value: "a"}, true, true},
		// cannot be judged: a missing key, a path through a non-map, a
		// string ordered against a number
		{&messages.ApprovalCond{Arg: "currency", Op: "=", Value: "EUR"}, true, false},
		{&messages.ApprovalCond{Arg: "currency", Op: "!=", Value: "EUR"}, true, false},
		{&messages.ApprovalCond{Arg: "amount.cents", Op: ">", Value: int64(1)}, true, false},
		{&messages.ApprovalCond{Arg: "note", Op: "<", Value: int64(5)}, true, false},
		{&messages.ApprovalCond{Arg: "order.id", Op: ">", Value: int64(5)}, true, false},
	}
	for _, c := range cases {
		if got := c.cond.Meets(args); got != c.meets {
			t.Errorf("%+v Meets = %v, want %v", c.cond, got, c.meets)
		}
		if got := c.cond.Holds(args); got != c.hold {
			t.Errorf("%+v Holds = %v, want %v", c.cond, got, c.hold)
		}
	}
}

// negatedOp is the operator that holds exactly where op does not, on
// every argument a condition can judge.
var negatedOp = map[string]string{">": "<=", "<=": ">", ">=": "<", "<": ">=", "=": "!=", "!=": "="}

// A condition written as JSON (dispatcher approve -pending -when, the
// viewer's filter, a mission's approval rule) over any JSON arguments:
// Validate, Meets and Holds never panic; Holds implies Meets; and the
// condition and its negation are judged alike, exactly one of them
// holding where they are (a call that cannot be judged is neither
// selected under one nor under the other, and needs approval under both).
func FuzzApprovalCond(f *testing.F) {
	f.Add([]byte(`{"arg":"amount","op":"<=","value":100}`), []byte(`{"amount":250,"order":"A-1"}`))
	f.Add([]byte(`{"arg":"order.total","op":">","value":99.5}`), []byte(`{"order":{"total":100}}`))
	f.Add([]byte(`{"arg":"note","op":"<","value":5}`), []byte(`{"note":"x"}`))
	f.Add([]byte(`{"arg":"currency","op":"=","value":"EUR"}`), []byte(`{"amount":1}`))
	f.Add([]byte(`{"arg":"flag","op":"!=","value":true}`), []byte(`{"flag":null}`))
	f.Add([]byte(`{"arg":"a.b","op":">=","value":"m"}`), []byte(`{"a":{"b":"n"}}`))
	f.Fuzz(func(t *testing.T, condJSON, argsJSON []byte) {
		d := json.NewDecoder(bytes.NewReader(condJSON))
		d.DisallowUnknownFields()
		var c messages.ApprovalCond
		if d.Decode(&c) != nil || c.Validate("when") != nil {
			return
		}
		d = json.NewDecoder(bytes.NewReader(argsJSON))
		d.UseNumber()
		var raw map[string]any
		if d.Decode(&raw) != nil {
			return
		}
		plain, err := messages.JSONNumbers(raw)
		if err != nil {
			return
		}
		args, _ := plain.(map[string]any)
		holds, meets := c.Holds(args), c.Meets(args)
		if holds && !meets {
			t.Fatalf("%+v holds for %s and is not met", c, argsJSON)
		}
		neg := c
		neg.Op = negatedOp[c.Op]
		if neg.Validate("when") != nil {
			t.Fatalf("the negation %+v of a valid condition is invalid", neg)
		}
		nholds, nmeets := neg.Holds(args), neg.Meets(args)
		judged, njudged := holds == meets, nholds == nmeets
		switch {
		case judged != njudged:
			t.Fatalf("%+v judged %v and its negation %v for %s", c, judged, njudged, argsJSON)
		case judged && holds == nholds:
			t.Fatalf("%+v and its negation both hold %v for %s", c, holds, argsJSON)
		case !judged && (holds || nholds || !meets || !nmeets):
			t.Fatalf("%+v not judged for %s: holds %v/%v, meets %v/%v", c, argsJSON, holds, nholds, meets, nmeets)
		}
	})
}

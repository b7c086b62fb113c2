package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp"
)

// TestCase is one input of Compiled.Validate and what to expect of it.
type TestCase struct {
	// Name labels the case in the report (default "case <n>").
	Name string
	// Args are the named inputs.
	Args map[string]any
	// Want, when non-nil, is the expected Return (compared as plain data,
	// numbers by value: 1 equals 1.0).
	Want any
	// WantFail, when set, expects the execution to fail with this reason.
	WantFail string
	// Check, when set, is called with the Return of a successful execution;
	// an error fails the case.
	Check func(got any) error
}

// CaseFailure is one failed test case.
type CaseFailure struct {
	// Index is the case's position (from 0); Name its label.
	Index int
	Name  string
	// Want and Got are the expected and actual values (Got is nil when the
	// execution failed).
	Want any
	Got  any
	// Reason is the execution's failure reason, if it failed.
	Reason string
	// Message says why the case failed.
	Message string
}

// ValidationReport is the result of Compiled.Validate.
type ValidationReport struct {
	// Total and Passed count the cases.
	Total, Passed int
	// Failures lists the failed cases in order.
	Failures []CaseFailure
}

// OK reports whether every case passed.
func (r ValidationReport) OK() bool { return len(r.Failures) == 0 }

// String summarizes the report, one line per failure.
func (r ValidationReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d cases passed", r.Passed, r.Total)
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "\n- %s: %s", f.Name, f.Message)
	}
	return b.String()
}

// Validate runs every case and reports
// which failed and why: an unexpected failure (with its reason and
// message), an unexpected success, a different value (want vs got) or a
// failed Check. Cases run one after another; ctx bounds them all.
func (c *Compiled) Validate(ctx context.Context, cases []TestCase) ValidationReport {
	r := ValidationReport{Total: len(cases)}
	for i, tc := range cases {
		name := tc.Name
		if name == "" {
			name = fmt.Sprintf("case %d", i+1)
		}
		cf := CaseFailure{Index: i, Name: name, Want: tc.Want}
		st, err := c.Execute(ctx, tc.Args)
		switch {
		case err != nil && tc.WantFail == "":
			cf.Reason, cf.Message = st.Fail.Reason, "execution failed: "+failText(st.Fail)
		case err != nil && st.Fail.Reason != tc.WantFail:
			cf.Reason, cf.Message = st.Fail.Reason, fmt.Sprintf("failed with %s, want %s: %s", st.Fail.Reason, tc.WantFail, st.Fail.Message)
		case err != nil:
			r.Passed++
			continue
		case tc.WantFail != "":
			cf.Got, cf.Message = st.Return, fmt.Sprintf("succeeded with %s, want failure %s", showValue(st.Return), tc.WantFail)
		case tc.Want != nil && !sameData(tc.Want, st.Return):
			cf.Got, cf.Message = st.Return, fmt.Sprintf("want %s, got %s", showValue(tc.Want), showValue(st.Return))
		case tc.Check != nil:
			if cerr := tc.Check(st.Return); cerr != nil {
				cf.Got, cf.Message = st.Return, "check failed: "+cerr.Error()
				break
			}
			r.Passed++
			continue
		default:
			r.Passed++
			continue
		}
		r.Failures = append(r.Failures, cf)
	}
	return r
}

// sameData compares plain data through the interpreter's equality
// (numbers by value, keys as strings).
func sameData(a, b any) bool {
	la, err1 := lisp.FromGo(a)
	lb, err2 := lisp.FromGo(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return lisp.Equal(la, lb)
}

func showValue(v any) string {
	lv, err := lisp.FromGo(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return lisp.Sprint(lv, lisp.PrintOptions{NoFirewall: true, MaxLen: 300})
}

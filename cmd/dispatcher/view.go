package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// missionView is what `dispatcher trace` and the viewer show of one
// mission, built only from what a dispatcher may read: its status, its
// stored result (the Step with its trace) and, while no result is stored,
// its progress events. Firewalled values are masked in it (JSON and HTML
// never carry them); the text printer reads the unmasked step and hides
// them itself.
type missionView struct {
	ID        string           `json:"id"`
	Status    *messages.Status `json:"-"`
	Submitted time.Time        `json:"-"`
	// Step is the stored result, nil while the mission runs.
	Step *messages.Step `json:"-"`
	// Preview cuts a Step over messages.LargeResultBytes to a preview in
	// the JSON form (previewStep), as the viewer serves it; without it
	// (trace -json, the viewer's ?full=1) the Step is whole.
	Preview bool `json:"-"`
	// Events are the progress events stored so far when there is no
	// result yet (the EVENTS stream keeps them for an hour).
	Events []*messages.Event `json:"-"`
	// Approvals are the mission's tool calls that needed approval, read
	// for a mission that waits or waited for one.
	Approvals []*messages.Approval `json:"-"`
	// StalledAfter is how long after its decision a mission that still
	// waits with no call pending counts as stalled (its wake lost), which
	// the JSON form names (stalled_call) for the viewer's Queue again;
	// 0: defaultStalledAfter.
	StalledAfter time.Duration `json:"-"`
}

// errMissionNotFound is returned for an id with neither status nor result.
var errMissionNotFound = errors.New("no such mission")

// viewSource is what loadView reads a mission from: a *fleet.Client.
type viewSource interface {
	Status(ctx context.Context, id string) (*messages.Status, error)
	Result(ctx context.Context, id string) (*messages.Step, error)
	Events(ctx context.Context, id string) ([]*messages.Event, error)
	Approvals(ctx context.Context, id string) ([]*messages.Approval, error)
}

// loadView reads mission id's status, result and (without a result) its
// events. A result stored between the status read and the result read
// finds a status that is not final yet: the status is read again, and
// Client.Status reports the final state the stored result implies, so
// the view never shows a result next to a running status.
func loadView(ctx context.Context, c viewSource, id string) (*missionView, error) {
	v := &missionView{ID: id}
	st, err := c.Status(ctx, id)
	switch {
	case errors.Is(err, fleet.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		v.Status = st
	}
	v.Submitted, _ = fleet.MissionTime(id)
	step, err := c.Result(ctx, id)
	switch {
	case errors.Is(err, fleet.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		v.Step = step
	}
	if v.Step != nil && (v.Status == nil || !messages.TerminalState(v.Status.State)) {
		switch st, err := c.Status(ctx, id); {
		case errors.Is(err, fleet.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			v.Status = st
		}
	}
	if v.Status == nil && v.Step == nil {
		return nil, fmt.Errorf("mission %s: %w", id, errMissionNotFound)
	}
	if v.Step == nil {
		if v.Events, err = c.Events(ctx, id); err != nil {
			return nil, err
		}
	}
	if v.Status != nil && (v.Status.Suspensions > 0 || v.Status.State == messages.StateAwaitingApproval) {
		if v.Approvals, err = c.Approvals(ctx, id); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// state is the mission's state: the status's, or the result's when the
// status is gone.
func (v *missionView) state() string {
	switch {
	case v.Status != nil:
		return v.Status.State
	case v.Step != nil && v.Step.Fail != nil:
		return messages.StateFailed
	case v.Step != nil:
		return messages.StateSucceeded
	}
	return ""
}

// MarshalJSON writes the view in the wire's JSON form (msgpack field
// names, messages.EncodeJSON) with every firewalled value masked:
// {"id", "state", "submitted", "duration_ns", "status", "step", "events"},
// and with Preview for a large Step "step_bytes" and "full".
func (v *missionView) MarshalJSON() ([]byte, error) {
	out := map[string]json.RawMessage{}
	put := func(k string, x any) error {
		b, err := json.Marshal(x)
		out[k] = b
		return err
	}
	if err := put("id", v.ID); err != nil {
		return nil, err
	}
	if err := put("state", v.state()); err != nil {
		return nil, err
	}
	if !v.Submitted.IsZero() {
		if err := put("submitted", v.Submitted.UTC()); err != nil {
			return nil, err
		}
	}
	if v.Status != nil {
		// the list's duration (queued and run), so both show one number
		if err := put("duration_ns", int64(fleet.MissionDuration(*v.Status, time.Now()))); err != nil {
			return nil, err
		}
	}
	if v.Status != nil {
		b, err := messages.EncodeJSON(v.Status)
		if err != nil {
			return nil, err
		}
		out["status"] = b
	}
	if v.Step != nil {
		st := maskStep(v.Step)
		if v.Preview {
			enc, err := messages.Marshal(st)
			if err != nil {
				return nil, err
			}
			if len(enc) > messages.LargeResultBytes {
				st = previewStep(st)
				if err := put("step_bytes", len(enc)); err != nil {
					return nil, err
				}
				if err := put("full", "/api/missions/"+v.ID+"?full=1"); err != nil {
					return nil, err
				}
			}
		}
		b, err := messages.EncodeJSON(st)
		if err != nil {
			return nil, err
		}
		out["step"] = b
	}
	if v.Approvals != nil {
		items := approvalItems(v.Approvals)
		for i := range items {
			items[i].EditedArgs = maskArgs(items[i].EditedArgs)
		}
		if err := put("approvals", items); err != nil {
			return nil, err
		}
		// the call whose decision the mission stalls on (its wake lost),
		// which the page offers to queue again
		if v.Status != nil {
			if a := fleet.StalledDecision(v.Status.State, v.Approvals, cmp.Or(v.StalledAfter, defaultStalledAfter), time.Now()); a != nil {
				if err := put("stalled_call", a.Call); err != nil {
					return nil, err
				}
			}
		}
	}
	if v.Events != nil {
		evs := make([]json.RawMessage, 0, len(v.Events))
		for _, ev := range v.Events {
			b, err := messages.EncodeJSON(ev.Masked())
			if err != nil {
				return nil, err
			}
			evs = append(evs, b)
		}
		b, err := json.Marshal(evs)
		if err != nil {
			return nil, err
		}
		out["events"] = b
	}
	b, err := marshalJSON(out, "")
	return bytes.TrimSuffix(b, []byte("\n")), err
}

// maskStep returns a copy of st with every firewalled value masked
// (messages.MaskFirewalled): the return value, failure details, memory,
// and in the trace each turn's result and memory and each tool call's
// arguments and result, sub-agent steps included.
func maskStep(st *messages.Step) *messages.Step {
	if st == nil {
		return nil
	}
	cp := *st
	cp.Return = messages.MaskFirewalled(st.Return)
	if st.Memory != nil {
		cp.Memory, _ = messages.MaskFirewalled(st.Memory).(map[string]any)
	}
	if st.Fail != nil {
		f := *st.Fail
		if f.Details != nil {
			f.Details, _ = messages.MaskFirewalled(f.Details).(map[string]any)
		}
		cp.Fail = &f
	}
	if st.Trace != nil {
		cp.Trace = make([]messages.Turn, len(st.Trace))
		for i, t := range st.Trace {
			t.Result = messages.MaskFirewalled(t.Result)
			if t.Memory != nil {
				t.Memory, _ = messages.MaskFirewalled(t.Memory).(map[string]any)
			}
			if t.ToolCalls != nil {
				calls := make([]messages.ToolCall, len(t.ToolCalls))
				for j, c := range t.ToolCalls {
					if c.Args != nil {
						c.Args, _ = messages.MaskFirewalled(c.Args).(map[string]any)
					}
					c.Result = messages.MaskFirewalled(c.Result)
					c.Child = maskStep(c.Child)
					if c.Approval != nil {
						a := *c.Approval
						a.EditedArgs = maskArgs(a.EditedArgs)
						c.Approval = &a
					}
					calls[j] = c
				}
				t.ToolCalls = calls
			}
			cp.Trace[i] = t
		}
	}
	return &cp
}

// previewStep returns a copy of a (masked) large Step with every value
// over 1 KiB encoded cut to a preview (fleet.CutValue): the return value,
// each memory value, and in the trace each turn's result and memory values
// and each tool call's arguments and result, sub-agent steps included. A
// cut value is replaced by {"cut": {"bytes": <encoded size>, "preview":
// <text>}}, so the viewer shows its size and beginning; the whole Step is
// served with ?full=1.
func previewStep(st *messages.Step) *messages.Step {
	if st == nil {
		return nil
	}
	cp := *st
	cp.Return = previewValue(st.Return)
	cp.Memory = previewMemory(st.Memory)
	if st.Trace != nil {
		cp.Trace = make([]messages.Turn, len(st.Trace))
		for i, t := range st.Trace {
			t.Result = previewValue(t.Result)
			t.Memory = previewMemory(t.Memory)
			if t.ToolCalls != nil {
				calls := make([]messages.ToolCall, len(t.ToolCalls))
				for j, c := range t.ToolCalls {
					if a, ok := fleet.CutValue(c.Args); ok {
						c.Args = map[string]any{"cut": a}
					}
					c.Result = previewValue(c.Result)
					c.Child = previewStep(c.Child)
					calls[j] = c
				}
				t.ToolCalls = calls
			}
			cp.Trace[i] = t
		}
	}
	return &cp
}

// previewValue is v, or {"cut": <fleet.CutValue>} when v is over 1 KiB.
func previewValue(v any) any {
	if v == nil {
		return nil
	}
	if c, ok := fleet.CutValue(v); ok {
		return map[string]any{"cut": c}
	}
	return v
}

// previewMemory is m with each value cut by previewValue.
func previewMemory(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		out[k] = previewValue(x)
	}
	return out
}

// maskArgs masks the firewalled values of a call's arguments (nil stays
// nil).
func maskArgs(args map[string]any) map[string]any {
	if args == nil {
		return nil
	}
	m, _ := messages.MaskFirewalled(args).(map[string]any)
	return m
}

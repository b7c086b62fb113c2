package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// MetaApproval is the endpoint metadata by which a tool service says that
// calls of a tool wait for a person's approval: "required" (every call)
// or the JSON of a messages.ApprovalCond (the calls whose arguments meet
// it). Metadata that is neither makes every call wait: a tool's owner who
// asked for approval gets it even when the condition is garbled.
const MetaApproval = "ptc.approval"

// approvalRequired is MetaApproval's value for "every call".
const approvalRequired = "required"

// ToolApproval, in a ToolSpec, makes calls of the tool wait for a person's
// approval before the service sees them (docs/approvals.md).
type ToolApproval struct {
	// When limits approval to the calls whose arguments meet it; nil:
	// every call.
	When *messages.ApprovalCond
}

// metadata is the MetaApproval value of a.
func (a *ToolApproval) metadata() (string, error) {
	if a.When == nil {
		return approvalRequired, nil
	}
	if err := a.When.Validate("approval.when"); err != nil {
		return "", err
	}
	b, err := json.Marshal(a.When)
	return string(b), err
}

// parseApprovalMeta reads MetaApproval of a tool served by service (nil:
// the tool needs none).
func parseApprovalMeta(v, tool, service string) *messages.ApprovalRule {
	if v == "" {
		return nil
	}
	r := &messages.ApprovalRule{Tool: tool, Service: service}
	if v == approvalRequired {
		return r
	}
	var c messages.ApprovalCond
	d := json.NewDecoder(strings.NewReader(v))
	d.UseNumber()
	if d.Decode(&c) != nil {
		return r
	}
	if n, ok := c.Value.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			c.Value = i
		} else if f, err := n.Float64(); err == nil {
			c.Value = f
		}
	}
	if c.Validate("") != nil {
		return r
	}
	r.When = &c
	return r
}

// ErrSuspended is the cause of a run cut short because a tool call waits
// for approval: the worker suspends the mission (docs/approvals.md).
var ErrSuspended = errors.New("fleet: mission suspended: a tool call waits for approval")

// suspendedError carries the call a suspended run waits for.
type suspendedError struct{ approval *messages.Approval }

func (e *suspendedError) Error() string {
	return fmt.Sprintf("fleet: mission suspended: call %s of tool %s waits for approval", e.approval.Call, e.approval.Tool)
}
func (e *suspendedError) Is(target error) bool { return target == ErrSuspended }

// CallSite is where a tool call is made: the program making it and the
// call's position in that program.
type CallSite struct {
	// Program is the source of the program.
	Program string
	// Position is the call's place in Program, "line:column" of the form
	// that makes it; "" when not known.
	Position string
}

// callSiteKey carries the CallSite of the tool calls made with a context.
type callSiteKey struct{}

// WithCallSite returns ctx carrying the call site of the tool calls made
// with it: a call that waits for approval shows it to the approver.
// Runners set it (pkg/fleet/agentrun does for every program's calls).
func WithCallSite(ctx context.Context, site CallSite) context.Context {
	return context.WithValue(ctx, callSiteKey{}, site)
}

func callSiteFrom(ctx context.Context) CallSite {
	switch s := ctx.Value(callSiteKey{}).(type) {
	case CallSite:
		return s
	case *CallSite: // WithTurnAndCallSite's
		return *s
	}
	return CallSite{}
}

// approvalGate decides, for one run of a mission, whether a tool call may
// be sent: calls no rule marks go at once; a marked call runs once
// approved, fails with a denial, or suspends the run.
type approvalGate struct {
	kv jetstream.KeyValue
	// nc, when not nil, reads single records (getApproval) with direct
	// gets that fall back to the stream's leader; nil: through kv.
	nc        *nats.Conn
	missionID string
	submitter string
	priority  string
	timeout   time.Duration
	mission   []messages.ApprovalRule
	worker    []messages.ApprovalRule
	suspend   func(*messages.Approval)
	emit      func(*messages.Event)
	now       func() time.Time
	// wait is how long a call tries the approval store again while it
	// does not answer (its first failure on); unavailable, when set, is
	// told once that wait is over: it ends the run, which comes back
	// later (the worker's ToolUnavailableWait and its run's cancel). With
	// wait 0 or unavailable nil the call fails with a tool error at once.
	wait        time.Duration
	unavailable func(error)

	// list reads the mission's records with their revisions; nil: each
	// call's record is read on its own.
	list func(context.Context) ([]*messages.Approval, map[string]uint64, error)
	// readAhead, when set, gives the records as read before the run's first
	// look (resumeReads): that look takes them instead of listing, as a
	// list not made for it, and a failed read is listed again.
	readAhead func(context.Context) ([]*messages.Approval, map[string]uint64, error)

	mu   sync.Mutex
	next map[string]int // occurrences of a call per turn and digest
	// seen holds the mission's records as the run last read or wrote
	// them, by call, once listed (listed): a decided record never
	// changes, so a call decided before the run is answered from it.
	seen   map[string]seenApproval
	listed bool
}

// seenApproval is a record and its revision as a run read or wrote it.
type seenApproval struct {
	a   *messages.Approval
	rev uint64
}

// rule returns the description of the first rule that marks the call, or
// "".
func (g *approvalGate) rule(info ToolInfo, name string, args map[string]any) string {
	for _, r := range g.mission {
		if r.Matches(name, info.Service, args) {
			return "mission" + describeRule(r)
		}
	}
	for _, r := range g.worker {
		if r.Matches(name, info.Service, args) {
			return "worker" + describeRule(r)
		}
	}
	if r := info.Approval; r != nil && r.Matches(name, info.Service, args) {
		return "service " + info.Service + describeRule(*r)
	}
	return ""
}

func describeRule(r messages.ApprovalRule) string {
	if r.When == nil {
		return ": every call"
	}
	v, _ := json.Marshal(r.When.Value)
	return fmt.Sprintf(": %s %s %s", r.When.Arg, r.When.Op, v)
}

// callID is the id of the next call of tool with args (plain data) in
// turn: "<turn>.<digest>.<occurrence>", the same on every run of the
// mission as long as the program makes the same calls.
func (g *approvalGate) callID(turn int, digest string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	base := strconv.Itoa(turn) + "." + digest
	k := g.next[base]
	if g.next == nil {
		g.next = map[string]int{} // at the first call that needs approval
	}
	g.next[base] = k + 1
	return base + "." + strconv.Itoa(k)
}

// check returns the arguments the call is sent with (args, or those the
// approver edited), the approval it runs under (nil: none needed), or the
// error it fails with: a *ToolError with code denied, or a
// *suspendedError once the run has been told to suspend.
//
// An approval store that does not answer (a node restarting, its stream
// electing a leader) is asked again, backing off from 25 ms to 500 ms,
// for up to g.wait; then the run is ended (g.unavailable) and the
// mission comes back later to ask again. The program is not told: a
// call it cannot make for the fleet's own outage would cost a model turn
// on every try, and the mission its turns.
func (g *approvalGate) check(ctx context.Context, info ToolInfo, name string, args map[string]any, plain any) (map[string]any, *messages.Approval, error) {
	rule := g.rule(info, name, args)
	if rule == "" {
		return args, nil, nil
	}
	call := g.callID(TurnFrom(ctx), callDigest(name, plain))
	site := callSiteFrom(ctx)
	key := messages.ApprovalKey(g.missionID, call)
	var down time.Time // when the store first did not answer this call
	pause := approvalRetryMin
	// unavailable waits before the next try (true), or, once the store
	// has not answered for g.wait, ends the run and returns the call's
	// error
	unavailable := func(err error) (bool, error) {
		if ctx.Err() != nil {
			return false, context.Cause(ctx)
		}
		if down.IsZero() {
			down = time.Now()
		}
		if g.unavailable == nil || time.Since(down) >= g.wait {
			if g.unavailable != nil {
				g.unavailable(err)
			}
			return false, approvalUnavailable(ctx, name, err)
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return false, context.Cause(ctx)
		}
		pause = min(2*pause, approvalRetryMax)
		return true, nil
	}
	for tries, conflicts := 0, 0; conflicts < 8; tries++ {
		// each request to the store is bounded on its own: one left to
		// the run's context (the program's time limit) would outlast the
		// gate's wait, and a store silent that long would fail the call
		// to the program instead of ending the run
		tctx, cancel := context.WithTimeout(ctx, approvalTryWait)
		a, rev, err := g.record(tctx, key, call, tries == 0)
		cancel()
		switch {
		case errors.Is(err, ErrNotFound):
			now := g.now().UTC()
			a = &messages.Approval{Version: messages.ApprovalVersion, MissionID: g.missionID, Call: call,
				State: messages.ApprovalPending, Tool: name, Service: info.Service,
				Args: maskArgs(args), Turn: TurnFrom(ctx), Program: site.Program, Position: site.Position, Rule: rule,
				Priority: g.priority, Submitter: g.submitter, RequestedAt: now, Deadline: now.Add(g.timeout)}
			data, err := messages.Marshal(a)
			if err != nil {
				return nil, nil, &ToolError{Tool: name, Code: messages.ToolErrInternal, Err: err, Message: "approval not recorded: " + err.Error()}
			}
			tctx, cancel := context.WithTimeout(ctx, approvalTryWait)
			rev, err := g.kv.Create(tctx, key, data)
			cancel()
			if errors.Is(err, jetstream.ErrKeyExists) {
				conflicts++
				continue
			} else if err != nil {
				// the store may have written the record and lost only its
				// reply: a record found as written is this request, and
				// the run waits for it rather than leaving it pending
				// with nobody waiting (the next try finds any other
				// pending record and waits for it too)
				tctx, cancel := context.WithTimeout(ctx, approvalTryWait)
				cur, _, gerr := getApproval(tctx, g.nc, nil, g.kv, key)
				cancel()
				if gerr == nil && cur.State == messages.ApprovalPending && cur.RequestedAt.Equal(now) {
					return nil, nil, g.stop(cur)
				}
				if again, err := unavailable(err); !again {
					return nil, nil, err
				}
				continue
			} else {
				g.keep(a, rev)
			}
			return nil, nil, g.stop(a)
		case err != nil:
			if again, err := unavailable(err); !again {
				return nil, nil, err
			}
			continue
		}
		switch a.State {
		case messages.ApprovalApproved:
			return approvedArgs(args, a.EditedArgs), a, nil
		case messages.ApprovalDenied:
			return nil, a, denial(name, a)
		}
		if g.now().Before(a.Deadline) {
			return nil, nil, g.stop(a)
		}
		a.State, a.DecidedBy, a.DecidedAt, a.Reason = messages.ApprovalDenied, "fleet", g.now().UTC(), messages.ReasonApprovalTimeout
		data, err := messages.Marshal(a)
		if err != nil {
			return nil, nil, &ToolError{Tool: name, Code: messages.ToolErrInternal, Err: err, Message: "approval not recorded: " + err.Error()}
		}
		tctx, cancel = context.WithTimeout(ctx, approvalTryWait)
		rev, err = g.kv.Update(tctx, key, data, rev)
		cancel()
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			conflicts++
			continue // decided meanwhile
		} else if err != nil {
			if again, err := unavailable(err); !again {
				return nil, nil, err
			}
			continue
		} else {
			g.keep(a, rev)
		}
		g.emit(decidedEvent(a))
		return nil, a, denial(name, a)
	}
	return nil, nil, approvalUnavailable(ctx, name, errors.New("the approval record kept changing"))
}

// record returns the record of call (key) and its revision, or
// ErrNotFound. The run's first look lists the mission's records (one
// request, whatever their number), which the audit of its trace then
// uses too; a call decided by then is answered from that list, since a
// decision is final. A call pending or without a record when listed is
// read again, unless the list was made for this look (first): it is as
// fresh as a read. Records read ahead of the run (readAhead) are a list not
// made for the look.
func (g *approvalGate) record(ctx context.Context, key, call string, first bool) (*messages.Approval, uint64, error) {
	if g.list != nil {
		g.mu.Lock()
		fresh := false
		if !g.listed {
			var as []*messages.Approval
			var revs map[string]uint64
			ahead := false
			if early := g.readAhead; early != nil {
				g.readAhead = nil
				var err error
				as, revs, err = early(ctx)
				ahead = err == nil
			}
			if !ahead {
				var err error
				if as, revs, err = g.list(ctx); err != nil {
					g.mu.Unlock()
					return nil, 0, err
				}
				fresh = true
			}
			g.listed = true
			if g.seen == nil {
				g.seen = make(map[string]seenApproval, len(as))
			}
			for _, a := range as {
				g.seen[a.Call] = seenApproval{a: a, rev: revs[a.Call]}
			}
		}
		s, ok := g.seen[call]
		g.mu.Unlock()
		switch {
		case ok && s.a.State != messages.ApprovalPending:
			return s.a, s.rev, nil
		case fresh && first && ok:
			return cloneApproval(s.a), s.rev, nil
		case fresh && first:
			return nil, 0, ErrNotFound
		}
	}
	a, rev, err := getApproval(ctx, g.nc, nil, g.kv, key)
	if err == nil {
		g.keep(cloneApproval(a), rev)
	}
	return a, rev, err
}

// keep notes a record as the run read or wrote it, for the audit.
func (g *approvalGate) keep(a *messages.Approval, rev uint64) {
	if g.list == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string]seenApproval{}
	}
	g.seen[a.Call] = seenApproval{a: a, rev: rev}
}

// cloneApproval returns a copy of a that check may change (a pending
// record it denies at its deadline) without changing what the gate
// keeps.
func cloneApproval(a *messages.Approval) *messages.Approval {
	c := *a
	return &c
}

// seenApprovals returns the mission's records as the run last saw them,
// oldest request first, and whether it listed them (else nil, false).
func (g *approvalGate) seenApprovals() ([]*messages.Approval, bool) {
	if g == nil {
		return nil, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.listed {
		return nil, false
	}
	as := make([]*messages.Approval, 0, len(g.seen))
	for _, s := range g.seen {
		as = append(as, s.a)
	}
	sortApprovals(as)
	return as, true
}

// stop tells the run to suspend for a and returns the call's error.
func (g *approvalGate) stop(a *messages.Approval) error {
	g.suspend(a)
	return &suspendedError{approval: a}
}

// approvalTryWait bounds each request of the approval gate to the store
// (a read, a write): a healthy store answers in milliseconds, and one
// silent that long counts toward the gate's wait.
const approvalTryWait = 2 * time.Second

// approvalRetryMin and approvalRetryMax bound the pause between tries of
// an approval store that did not answer.
const (
	approvalRetryMin = 25 * time.Millisecond
	approvalRetryMax = 500 * time.Millisecond
)

// approvalStoreError is the cause of a run ended at a call that needs
// approval because the approval store did not answer for the gate's
// wait: a retryable failure, whose mission comes back and asks again.
type approvalStoreError struct{ err error }

func (e *approvalStoreError) Error() string {
	return "fleet: a tool call needs approval and the approval store did not answer: " + e.err.Error()
}
func (e *approvalStoreError) Unwrap() []error { return []error{e.err, ErrRetryable} }

// approvalUnavailable is the error of a call whose approval could not be
// read or recorded: the call is not sent.
func approvalUnavailable(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return &ToolError{Tool: name, Code: messages.ToolErrUnavailable, Err: err,
		Message: "it needs approval and the approval store did not answer (" + err.Error() + "); try again later"}
}

// denial is the tool error of a denied call.
func denial(name string, a *messages.Approval) error {
	msg := "denied"
	if a.DecidedBy != "" {
		msg += " by " + a.DecidedBy
	}
	if a.Reason != "" {
		msg += ": " + a.Reason
	}
	return &ToolError{Tool: name, Code: messages.ToolErrDenied, Message: msg}
}

// approvedArgs are the arguments an approved call is sent with: the
// program's, or those the approver gave, in which a value equal to
// messages.FirewallMask keeps the program's value of that key (an
// approver never sees firewalled values, so cannot give them again).
func approvedArgs(args, edited map[string]any) map[string]any {
	if edited == nil {
		return args
	}
	out := maps.Clone(edited)
	for k, v := range out {
		if s, ok := v.(string); ok && s == messages.FirewallMask {
			if orig, ok := args[k]; ok {
				out[k] = orig
			} else {
				delete(out, k)
			}
		}
	}
	return out
}

// maskArgs returns args with firewalled values masked, as events show
// them.
func maskArgs(args map[string]any) map[string]any {
	ev := (&messages.Event{Args: args}).Masked()
	if ev.Args == nil {
		return map[string]any{}
	}
	return ev.Args
}

// getApproval reads one approval record and its revision: on nc with
// directLast (from the stream's leader when no replica answers), or,
// with nc nil, through kv. A record deleted or purged is ErrNotFound.
func getApproval(ctx context.Context, nc *nats.Conn, replies *replyMux, kv jetstream.KeyValue, key string) (*messages.Approval, uint64, error) {
	var data []byte
	var rev uint64
	if nc != nil {
		var hdr nats.Header
		var err error
		data, rev, hdr, err = directLast(ctx, nc, replies, "KV_"+messages.BucketApprovals, "$KV."+messages.BucketApprovals+"."+key)
		if errors.Is(err, jetstream.ErrMsgNotFound) || err == nil && kvDeleted(hdr) {
			return nil, 0, ErrNotFound
		}
		if err != nil {
			return nil, 0, fmt.Errorf("fleet: approval %s: %w", key, err)
		}
	} else {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, 0, ErrNotFound
		}
		if err != nil {
			return nil, 0, err
		}
		data, rev = e.Value(), e.Revision()
	}
	a, err := decodeApproval(key, data)
	if err != nil {
		return nil, 0, err
	}
	return a, rev, nil
}

// decodeApproval decodes and checks the approval record stored under key.
func decodeApproval(key string, data []byte) (*messages.Approval, error) {
	var a messages.Approval
	if err := messages.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("fleet: approval %s: %w", key, err)
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("fleet: approval %s: %w", key, err)
	}
	return &a, nil
}

// listApprovals returns the approval records of mission id, oldest
// request first, and the revision of each by call. It reads them with
// one batch direct get (lastPerSubject): no consumer, so a reader needs
// no right to create one, and no stream info. A mission with more
// records than one batch answers has them listed from its stream's info
// (the bucket's subjects of the mission) and read one direct get each.
func listApprovals(ctx context.Context, replies *replyMux, js jetstream.JetStream, id string) ([]*messages.Approval, map[string]uint64, error) {
	prefix := "$KV." + messages.BucketApprovals + "."
	msgs, err := lastPerSubject(ctx, replies, "KV_"+messages.BucketApprovals, prefix+id+".>")
	if errors.Is(err, errBatchIncomplete) || errors.Is(err, errNoDirectAnswer) {
		return listApprovalsByInfo(ctx, js, id)
	}
	if err != nil {
		return nil, nil, err
	}
	var out []*messages.Approval
	revs := map[string]uint64{}
	for _, m := range msgs {
		if op := m.Header.Get(kvOperationHeader); op != "" && op != "PUT" {
			continue // deleted or purged
		}
		key := strings.TrimPrefix(m.Header.Get(jetstream.SubjectHeader), prefix)
		a, err := decodeApproval(key, m.Data)
		if err != nil {
			return nil, nil, err
		}
		rev, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("fleet: approval %s: no revision in the direct get's answer", key)
		}
		out = append(out, a)
		revs[a.Call] = rev
	}
	sortApprovals(out)
	return out, revs, nil
}

// kvOperationHeader marks a KV entry that deletes or purges its key.
const kvOperationHeader = "KV-Operation"

// listApprovalsByInfo is listApprovals for a mission with more records
// than one batch direct get answers, or whose batch direct get no replica
// answered: the stream's info (from its leader) lists the records'
// subjects, each read with directLast (from the leader when no replica
// answers).
func listApprovalsByInfo(ctx context.Context, js jetstream.JetStream, id string) ([]*messages.Approval, map[string]uint64, error) {
	s, err := js.Stream(ctx, "KV_"+messages.BucketApprovals)
	if err != nil {
		return nil, nil, err
	}
	prefix := "$KV." + messages.BucketApprovals + "."
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(prefix+id+".>"))
	if err != nil {
		return nil, nil, err
	}
	var out []*messages.Approval
	revs := map[string]uint64{}
	for subj := range info.State.Subjects {
		data, rev, hdr, err := directLast(ctx, js.Conn(), nil, "KV_"+messages.BucketApprovals, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) || err == nil && kvDeleted(hdr) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("fleet: approval %s: %w", strings.TrimPrefix(subj, prefix), err)
		}
		a, err := decodeApproval(strings.TrimPrefix(subj, prefix), data)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, a)
		revs[a.Call] = rev
	}
	sortApprovals(out)
	return out, revs, nil
}

func sortApprovals(as []*messages.Approval) {
	slices.SortFunc(as, func(a, b *messages.Approval) int {
		if c := a.RequestedAt.Compare(b.RequestedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Call, b.Call)
	})
}

// requestedEvent is the approval_requested event of a.
func requestedEvent(a *messages.Approval) *messages.Event {
	return &messages.Event{Kind: messages.EventApprovalRequested, Tool: a.Tool, Turn: a.Turn, Args: a.Args,
		Program: a.Program, CallID: a.Call, Data: map[string]any{
			"call": a.Call, "service": a.Service, "rule": a.Rule, "position": a.Position,
			"requested_at": a.RequestedAt.Format(time.RFC3339Nano), "deadline": a.Deadline.Format(time.RFC3339Nano),
		}}
}

// decidedEvent is the approval_decided event of a.
func decidedEvent(a *messages.Approval) *messages.Event {
	return &messages.Event{Kind: messages.EventApprovalDecided, Tool: a.Tool, Turn: a.Turn, CallID: a.Call, Data: approvalData(a)}
}

// parkTTLMargin is how long at least a suspended mission's approval
// records and journal outlive its approval deadline: the wait is bounded
// by the stores' ResultTTL less it.
const parkTTLMargin = time.Hour

// parkMark is what a suspended mission's parked message says of its
// events (messages.HeaderParkedEvent, messages.HeaderParkedDecided,
// messages.HeaderParkedSuspension): event is the number of its
// approval_requested event (0: none, as for a mission waiting for its
// quota), decided how many of its approval records its run saw decided
// and suspension the status's Suspensions once suspended.
type parkMark struct {
	event      uint64
	decided    int
	suspension int
}

// park stores a suspended mission's message (data and headers as
// delivered, with mark) as the message schedule that queues it again at
// deadline: a decision queues it at once (Client.Decide), the deadline
// otherwise. One message is both: the schedule carries the mission, and
// the server removes it once it fired.
func park(ctx context.Context, js jetstream.JetStream, k missionKey, priority string, data []byte, hdr nats.Header, deadline time.Time, mark parkMark) error {
	id := k.id
	body := &nats.Msg{Subject: messages.ParkSubject(id), Data: data, Header: nats.Header{}}
	for _, k := range []string{messages.HeaderMissionID, messages.HeaderContentType, messages.HeaderTraceParent, messages.HeaderTraceState} {
		if v := hdr.Get(k); v != "" {
			body.Header.Set(k, v)
		}
	}
	body.Header.Set(messages.HeaderMissionID, id)
	if mark.event > 0 {
		body.Header.Set(messages.HeaderParkedEvent, strconv.FormatUint(mark.event, 10))
		body.Header.Set(messages.HeaderParkedDecided, strconv.Itoa(mark.decided))
		body.Header.Set(messages.HeaderParkedSuspension, strconv.Itoa(mark.suspension))
	}
	body.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	body.Header.Set(headerSchedule, "@at "+deadline.UTC().Truncate(time.Second).Add(time.Second).Format(time.RFC3339))
	body.Header.Set(headerScheduleTarget, messages.WakeSubject(k.sub, priority, id))
	body.Header.Set(headerScheduleTTL, wakeTTL)
	if _, err := js.PublishMsg(ctx, body); err != nil {
		return fmt.Errorf("fleet: park %s: %w", id, err)
	}
	return nil
}

// parkedMessage returns mission id's parked message from stream (PARKED,
// read on nc, with its requests on replies when it is nc's reply mux:
// getMsgOn), or nil when it has none (not parked yet, woken by
// its schedule, or finished). A mission parked by a worker of an earlier
// release has an empty schedule on mission.park.<id> that copies its
// message from mission.parked.<id>, which is read then.
func parkedMessage(ctx context.Context, nc *nats.Conn, replies *replyMux, stream jetstream.Stream, id string) (*jetstream.RawStreamMsg, error) {
	raw, err := getMsgOn(ctx, nc, replies, stream, lastOn(messages.ParkSubject(id)))
	if err == nil && len(raw.Data) == 0 && raw.Header.Get(headerScheduleSource) == messages.ParkedSubject(id) {
		raw, err = getMsgOn(ctx, nc, replies, stream, lastOn(messages.ParkedSubject(id)))
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) || (err == nil && len(raw.Data) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// unpark removes a finished mission's parked message, the schedule that
// would queue it again: it is replaced (rollup) by an empty marker that
// expires at once. (A message an earlier release parked on
// mission.parked.<id> expires with its TTL.) The publish's request goes
// on replies when it is js's connection's reply mux (publishAckedOn).
func unpark(ctx context.Context, js jetstream.JetStream, replies *replyMux, id string) error {
	m := &nats.Msg{Subject: messages.ParkSubject(id), Header: nats.Header{}}
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	m.Header.Set(jetstream.MsgTTLHeader, "1s")
	if _, err := publishAckedOn(ctx, js.Conn(), replies, m); err != nil {
		return fmt.Errorf("fleet: unpark %s: %w", id, err)
	}
	return nil
}

// JetStream message-schedule headers (NATS 2.12 and later).
const (
	headerSchedule       = "Nats-Schedule"
	headerScheduleTarget = "Nats-Schedule-Target"
	headerScheduleSource = "Nats-Schedule-Source"
	headerScheduleTTL    = "Nats-Schedule-TTL"
)

// wakeTTL is how long a wake message stays in PARKED at most: a worker
// moves it into MISSIONS and removes it at once (wakeMover.move); a day
// covers a fleet left with no worker for hours.
const wakeTTL = "24h"

// hasApprovalRules reports whether the mission or its worker sets rules
// that may mark a call for approval (a tool's service may set its own);
// a nil p has none.
func (p *missionRun) hasApprovalRules() bool {
	return p != nil && ((p.m.Approval != nil && len(p.m.Approval.Rules) > 0) || len(p.w.cfg.ApprovalRules) > 0)
}

// approvalGate returns the approval gate of the mission's run, which
// suspends the run (its cancel) at the call that must wait.
func (p *missionRun) approvalGate() *approvalGate {
	g := p.w.approvalGate(p.m, p.em, func(a *messages.Approval) { p.cancel(&suspendedError{approval: a}) })
	g.unavailable = func(err error) { p.cancel(&approvalStoreError{err: err}) }
	return g
}

// approvalGate returns the gate of one run of m; suspend is called with
// the call the run must stop at.
func (w *Worker) approvalGate(m *messages.Mission, em *emitter, suspend func(*messages.Approval)) *approvalGate {
	timeout := w.cfg.ApprovalTimeout
	var rules []messages.ApprovalRule
	if m.Approval != nil {
		rules = m.Approval.Rules
		if m.Approval.Timeout > 0 {
			timeout = m.Approval.Timeout
		}
	}
	if c := w.cfg.Store.withDefaults().ResultTTL; timeout > c-parkTTLMargin {
		timeout = c - parkTTLMargin // the records and the journal must outlive the wait
	}
	prio := m.Priority
	if prio == "" {
		prio = messages.PriorityNormal
	}
	return &approvalGate{kv: w.st.Approvals, nc: w.st.nc, missionID: m.ID, submitter: em.sub, priority: prio, timeout: timeout,
		mission: rules, worker: w.cfg.ApprovalRules, suspend: suspend, emit: em.Emit, now: time.Now, wait: w.cfg.ToolUnavailableWait,
		list: func(ctx context.Context) ([]*messages.Approval, map[string]uint64, error) {
			return listApprovals(ctx, w.replies, w.js, m.ID)
		}}
}

// consulted reports whether the run met a call that needed approval.
func (g *approvalGate) consulted() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.next) > 0
}

// suspend parks a mission whose run stopped at call a: an
// approval_requested event is emitted, the message is stored with that
// event's number (which numbers the decision's event) and a schedule
// that queues it again at a's deadline, the status says
// awaiting_approval (with journalSeq, the JOURNAL sequence of the
// journal's last message, 0 when unknown) and the message is acked. A
// mission that cannot be parked is handed back like a retryable failure (its next run stops at
// the same call, requests it again and tries again).
func (w *Worker) suspend(ctx context.Context, msg jetstream.Msg, k missionKey, em *emitter, m *messages.Mission, meta *jetstream.MsgMetadata, attempt int, entry *statusEntry, gate *approvalGate, a *messages.Approval, journalSeq uint64, log *zerolog.Logger) {
	mark := parkMark{event: em.emit(requestedEvent(a)), suspension: entry.st.Suspensions + 1}
	if as, ok := gate.seenApprovals(); ok {
		for _, r := range as {
			if r.State != messages.ApprovalPending {
				mark.decided++
			}
		}
	} else {
		mark.event = 0 // the records it saw are unknown: a decider reads the last event
	}
	if err := park(ctx, w.js, k, a.Priority, msg.Data(), msg.Headers(), a.Deadline, mark); err != nil {
		log.Warn().Err(err).Msg("mission not suspended")
		w.retryOrDead(ctx, msg, k, em, attempt, meta, entry, fmt.Errorf("%w (%w)", err, ErrRetryable), log)
		return
	}
	suspended, takenOver := suspendedStatus(w.cfg.ID, entry.st.Attempt, entry.st.Suspensions, journalSeq, missionDigest(msg.Data()))
	st := entry.st
	suspended(&st)
	if _, err := casStatus(ctx, w.st, st, entry.rev); err != nil {
		// changed under the run (a cancel flag): written again from what
		// it is now, else a wake would find it running and be dropped
		_, err := updateStatus(ctx, w.st, k, suspended)
		if err == nil && *takenOver {
			// another worker's delivery holds the mission now: the
			// message is its own to settle, and its run goes on (or
			// suspends again at the same call)
			log.Warn().Msg("mission taken over while it suspended; leaving it to its owner")
			em.drop()
			w.cfg.Metrics.fencedRun()
			attemptFrom(ctx).setOutcome("fenced")
			return
		}
		if err != nil {
			// Not written (the store without a leader): while the
			// status says running, a decision's wake and the deadline's
			// are dropped as duplicate submissions, so the message is
			// not acknowledged. It comes back, and its next run
			// suspends again at the same call, or finds it decided.
			log.Warn().Err(err).Msg("status not set to awaiting_approval")
			w.retryOrDead(ctx, msg, k, em, attempt, meta, entry, fmt.Errorf("suspension not recorded: %w (%w)", err, ErrRetryable), log)
			return
		}
	}
	em.Flush()
	if err := msg.Ack(); err != nil {
		log.Warn().Err(err).Msg("ack failed; the redelivered mission suspends again")
	}
	attemptFrom(ctx).setOutcome("suspended")
	log.Info().Str("call", a.Call).Str("tool", a.Tool).Time("deadline", a.Deadline).Msg("mission suspended: a tool call waits for approval")
	if w.approvalParked != nil {
		w.approvalParked(k)
	}
	// A decision made while the mission was parking found no parked
	// message, or a status still running: queue it now.
	if cur, _, err := getApproval(ctx, w.st.nc, w.replies, w.st.Approvals, messages.ApprovalKey(m.ID, a.Call)); err == nil && cur.State != messages.ApprovalPending {
		woken := nats.Header{}
		woken.Set(messages.HeaderWoken, cur.Call)
		if err := wakeNow(ctx, w.js, w.replies, k, a.Priority, msg.Data(), msg.Headers(), wakeMsgID(m.ID, "wake", cur)+"/"+strconv.Itoa(st.Suspensions), woken); err != nil {
			log.Warn().Err(err).Msg("decided mission not queued; it resumes at its deadline")
		}
	}
	// counted once settled: a decision recorded from now on finds the
	// mission parked, and only its decider or its deadline queues it
	w.stats.suspended.Add(1)
}

// suspendedStatus returns the edit that sets a status to awaiting
// approval for the run of worker at attempt, which met a call needing
// approval after suspensions suspensions (journalSeq, the journal's last
// write; digest, the mission body's). It leaves a final status as it is,
// and a status another delivery has claimed since (another worker, or a
// later attempt: this run's heartbeats lapsed) or suspended since,
// setting *takenOver: overwriting it would take the mission from the run
// that holds it, or count one suspension twice.
func suspendedStatus(worker string, attempt, suspensions int, journalSeq uint64, digest string) (edit func(*messages.Status) bool, takenOver *bool) {
	takenOver = new(bool)
	edit = func(s *messages.Status) bool {
		*takenOver = false
		if messages.TerminalState(s.State) {
			return false
		}
		if s.Suspensions != suspensions || s.State == messages.StateRunning && (s.Worker != worker || s.Attempt != attempt) {
			*takenOver = true
			return false
		}
		s.State, s.Worker, s.StreamSeq = messages.StateAwaitingApproval, "", 0
		s.Suspensions++
		s.JournalSeq = journalSeq
		s.MissionDigest = digest
		return true
	}
	return edit, takenOver
}

// missionDigest is the SHA-256, in lower-case hex, of a mission's
// message body (messages.Status.MissionDigest).
func missionDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// suspendedMission reports whether data is the body of the mission a
// status awaiting approval was suspended with (digest, its
// MissionDigest): the body its parked message holds and a decision's
// wake carries. A status without a digest was written by a worker of
// a release before it, and any body passes.
func suspendedMission(data []byte, digest string) bool {
	if digest == "" {
		return true
	}
	sum := sha256.Sum256(data)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:]) == digest
}

// attachApprovals records, in step's trace, the approval of each tool
// call that needed one: who decided, when, and what they changed.
// The records are those the run's gate listed and wrote when it met such
// a call, else they are read.
func (w *Worker) attachApprovals(ctx context.Context, id string, gate *approvalGate, step *messages.Step, log *zerolog.Logger) {
	if as, ok := gate.seenApprovals(); ok {
		attachApprovals(step, as)
		return
	}
	as, _, err := listApprovals(ctx, w.replies, w.js, id)
	if err != nil {
		log.Warn().Err(err).Msg("approvals not added to the trace")
		return
	}
	attachApprovals(step, as)
}

// attachApprovals sets ToolCall.Approval on the calls of step's trace (and
// its sub-agents') that as decided, matching each record to the first
// call of its tool with its arguments not yet matched.
func attachApprovals(step *messages.Step, as []*messages.Approval) {
	var calls []*messages.ToolCall
	var walk func(s *messages.Step)
	walk = func(s *messages.Step) {
		for i := range s.Trace {
			for j := range s.Trace[i].ToolCalls {
				c := &s.Trace[i].ToolCalls[j]
				calls = append(calls, c)
				if c.Child != nil {
					walk(c.Child)
				}
			}
		}
	}
	walk(step)
	for _, a := range as {
		digest := strings.Split(a.Call, ".")[1]
		for _, c := range calls {
			if c.Approval != nil || c.Name != a.Tool {
				continue
			}
			plain, err := messages.Normalize(c.Args)
			if err != nil || callDigest(c.Name, plain) != digest {
				continue
			}
			c.Approval = a
			break
		}
	}
}

// withApproval adds a call's approval to an event's data.
func withApproval(data map[string]any, a *messages.Approval) map[string]any {
	if data == nil {
		return map[string]any{"approval": approvalData(a)}
	}
	data["approval"] = approvalData(a)
	return data
}

// approvalData is what an event says of a call's approval: the data of
// its approval_decided event, and the "approval" of its tool_result
// event's data.
func approvalData(a *messages.Approval) map[string]any {
	d := map[string]any{"call": a.Call, "state": approvalState(a.State), "decided_by": a.DecidedBy,
		"decided_at": a.DecidedAt.Format(time.RFC3339Nano), "reason": a.Reason}
	if a.EditedArgs != nil {
		d["edited_args"] = a.EditedArgs
	}
	return d
}

// approvalState is an approval's state as an event's value: one of the
// states, boxed without an allocation.
func approvalState(s string) any {
	switch s {
	case messages.ApprovalApproved:
		return messages.ApprovalApproved
	case messages.ApprovalDenied:
		return messages.ApprovalDenied
	case messages.ApprovalPending:
		return messages.ApprovalPending
	}
	return s
}

// Decision is a person's (or an approving agent's) answer to a tool call
// that waits for approval.
type Decision struct {
	// Approve runs the call; false denies it.
	Approve bool
	// Call names the call (Approval.Call, or a unique prefix of it); ""
	// when the mission has exactly one call waiting.
	Call string
	// Args, when set on an approval, replace the call's arguments; a
	// value equal to messages.FirewallMask keeps the program's value of
	// that key.
	Args map[string]any
	// Reason says why (shown to the model on a denial), at most
	// messages.MaxApprovalReason bytes.
	Reason string
	// By names who decided, for the audit.
	By string
}

// ErrNoPendingCall is returned by Decide when no call of the mission
// waits for a decision, or Decision.Call names none that does.
var ErrNoPendingCall = errors.New("fleet: no such call waits for approval")

// ErrQueuedAgain is wrapped, with ErrNoPendingCall, by the error of a
// Decide that found the mission still waiting with no call pending after
// its decision (its wake lost) and queued it again: the mission resumes
// with the decision recorded before.
var ErrQueuedAgain = errors.New("queued it again")

// Approvals returns the tool calls of mission id that needed approval,
// pending or decided, oldest request first.
func (c *Client) Approvals(ctx context.Context, id string) ([]*messages.Approval, error) {
	if err := checkID("approvals", id); err != nil {
		return nil, err
	}
	as, _, err := c.approvals(ctx, id)
	return as, err
}

// approvals returns the approval records of mission id and the revision
// of each by call.
func (c *Client) approvals(ctx context.Context, id string) ([]*messages.Approval, map[string]uint64, error) {
	as, revs, err := listApprovals(ctx, c.replies, c.js, id)
	if err != nil {
		return nil, nil, fmt.Errorf("fleet: approvals of %s: %w", id, err)
	}
	return as, revs, nil
}

// Decide approves or denies a call of mission id that waits for approval
// and queues the mission again, so that any worker resumes it at once:
// the call then runs (with d.Args when given) exactly once, or fails with
// a tool error naming the denial and d.Reason. It returns the decided
// record. A call already decided is an error wrapping ErrNoPendingCall;
// when the mission still waits with no call pending (a decision whose wake
// was lost), Decide queues it again, whether it names the decided call or
// none, and the error also wraps ErrQueuedAgain.
func (c *Client) Decide(ctx context.Context, id string, d Decision) (*messages.Approval, error) {
	return c.decide(ctx, id, d, nil, nil)
}

// decide is Decide. listed, when not nil, are mission id's records as
// read already (its pending ones at least) and revs their revisions by
// call: its first try decides with them instead of reading them, and a
// try after a record changed reads them all.
func (c *Client) decide(ctx context.Context, id string, d Decision, listed []*messages.Approval, listedRevs map[string]uint64) (*messages.Approval, error) {
	if err := checkID("decide", id); err != nil {
		return nil, err
	}
	if len(d.Reason) > messages.MaxApprovalReason || len(d.By) > messages.MaxApprovalReason {
		return nil, fmt.Errorf("fleet: decide %s: reason or decider is over %d bytes", id, messages.MaxApprovalReason)
	}
	if d.Args != nil {
		plain, err := messages.Normalize(d.Args)
		m, ok := plain.(map[string]any)
		if err != nil || !ok {
			return nil, fmt.Errorf("fleet: decide %s: args: not a map of plain values (%v)", id, err)
		}
		d.Args = m
	}
	// The mission's status, read once when needed: its submitter (whose
	// subjects its wake and events are on) when the record does not name
	// it, and its state when no call is pending.
	var st *messages.Status
	status := func() (*messages.Status, error) {
		if st != nil {
			return st, nil
		}
		s, err := c.status(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("fleet: decide %s: %w", id, err)
		}
		st = s
		return st, nil
	}
	for try := range 8 {
		// the records and their revisions: the decision is a
		// compare-and-set on the revision read here
		as, revs := listed, listedRevs
		if try > 0 || as == nil {
			var err error
			if as, revs, err = c.approvals(ctx, id); err != nil {
				return nil, err
			}
		}
		a, err := pickCall(id, as, d.Call)
		if err != nil {
			if !errors.Is(err, ErrNoPendingCall) {
				return nil, err
			}
			return nil, c.requeueDecided(ctx, id, status, as, d.Call, err)
		}
		key, rev := messages.ApprovalKey(id, a.Call), revs[a.Call]
		if a.State != messages.ApprovalPending {
			// the call named was decided: deciding it again (the command
			// the listing prints, run again after its error) queues the
			// mission when it still waits, as when no call is named
			decided := fmt.Errorf("%w: call %s of mission %s was %s by %s", ErrNoPendingCall, a.Call, id, a.State, a.DecidedBy)
			if slices.ContainsFunc(as, func(r *messages.Approval) bool { return r.State == messages.ApprovalPending }) {
				return nil, decided
			}
			return nil, c.requeueDecided(ctx, id, status, as, a.Call, decided)
		}
		k := missionKey{sub: a.Submitter, id: id}
		if k.sub == "" {
			// a record written without its submitter
			s, err := status()
			if err != nil {
				return nil, err
			}
			k.sub = s.Submitter
		}
		a.State, a.DecidedBy, a.DecidedAt, a.Reason = messages.ApprovalDenied, d.By, time.Now().UTC(), d.Reason
		if d.Approve {
			a.State, a.EditedArgs = messages.ApprovalApproved, d.Args
		}
		data, err := messages.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("fleet: decide %s: %w", id, err)
		}
		if _, err := c.updateApproval(ctx, key, data, rev); errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("fleet: decide %s: %w", id, err)
		}
		parked, perr := c.parked(ctx, id)
		n, last := c.emitDecided(ctx, k, a, as, parked)
		if perr != nil {
			return a, perr
		}
		var woken nats.Header
		if last && parked != nil && parked.Header.Get(messages.HeaderParkedSuspension) != "" {
			s := parked.Header.Get(messages.HeaderParkedSuspension)
			woken = nats.Header{messages.HeaderWokenEvent: {strconv.FormatUint(n, 10)}, messages.HeaderWokenSuspension: {s}}
		}
		if err := c.wakeParked(ctx, k, a, parked, woken); err != nil {
			return a, err
		}
		return a, nil
	}
	return nil, fmt.Errorf("fleet: decide %s: the approval record kept changing", id)
}

// updateApproval writes an approval record, data, over revision rev of
// key, as Approvals.Update does, made with casPublish.
func (c *Client) updateApproval(ctx context.Context, key string, data []byte, rev uint64) (uint64, error) {
	if c.st.nc == nil || !kvKeyValid(key) {
		return c.st.Approvals.Update(ctx, key, data, rev)
	}
	return casPublish(ctx, c.st.nc, c.st.replies, kvSubject(messages.BucketApprovals, key), data, rev)
}

// requeueDecided queues mission id again when its status (read once by
// status) still says awaiting_approval though the decision it waited for
// was recorded: its wake was lost (the decider died, or its publish
// failed), which would otherwise leave the mission to the workers' sweep
// (WorkerConfig.StalledAfter) or its deadline. It
// queues the wake of the latest decided call of as that call names (its
// prefix; "" any) and returns noPending, saying so; a mission no longer
// waiting gets noPending as it is. A mission that resumed meanwhile gets
// a duplicate copy, which its worker drops.
func (c *Client) requeueDecided(ctx context.Context, id string, status func() (*messages.Status, error), as []*messages.Approval, call string, noPending error) error {
	s, err := status()
	if err != nil {
		return err
	}
	if s.State != messages.StateAwaitingApproval {
		return noPending
	}
	k := missionKey{sub: s.Submitter, id: id}
	var last *messages.Approval
	for _, a := range as {
		if a.State != messages.ApprovalPending && strings.HasPrefix(a.Call, call) && (last == nil || !a.DecidedAt.Before(last.DecidedAt)) {
			last = a
		}
	}
	if last == nil {
		return noPending
	}
	if err := c.resume(ctx, k, last); err != nil {
		return fmt.Errorf("%w; queueing the mission again failed: %w", noPending, err)
	}
	return fmt.Errorf("%w; the mission still waited after call %s was %s: %w", noPending, last.Call, last.State, ErrQueuedAgain)
}

// pickCall returns the pending call of as that call names: its whole id or
// a unique prefix; "" names the only pending call.
func pickCall(id string, as []*messages.Approval, call string) (*messages.Approval, error) {
	var pending, named []*messages.Approval
	for _, a := range as {
		if call != "" && strings.HasPrefix(a.Call, call) {
			named = append(named, a)
		}
		if a.State == messages.ApprovalPending {
			pending = append(pending, a)
		}
	}
	list := func(as []*messages.Approval) string {
		var s []string
		for _, a := range as {
			s = append(s, a.Call+" ("+a.Tool+", "+a.State+")")
		}
		return strings.Join(s, ", ")
	}
	switch {
	case call == "" && len(pending) == 1:
		return pending[0], nil
	case call == "" && len(pending) == 0:
		return nil, fmt.Errorf("%w: mission %s has no call waiting", ErrNoPendingCall, id)
	case call == "":
		return nil, fmt.Errorf("%w: mission %s has %d calls waiting, name one: %s", ErrNoPendingCall, id, len(pending), list(pending))
	case len(named) == 1:
		return named[0], nil
	case len(named) == 0:
		return nil, fmt.Errorf("%w: mission %s has no call %q; its calls: %s", ErrNoPendingCall, id, call, list(as))
	}
	return nil, fmt.Errorf("%w: %q names %d calls of mission %s: %s", ErrNoPendingCall, call, len(named), id, list(named))
}

// emitDecided publishes the approval_decided event of a (as, the
// mission's records, a among them), numbered after the
// mission's last event (its worker is parked meanwhile): the number its
// parked message gives (messages.HeaderParkedEvent) when no record but a
// was decided since it parked, else the last stored event's. It returns
// the event's number and whether it is the last event of the suspension
// for sure: numbered from the parked message, with no other call of the
// mission pending (so no other decision follows it).
func (c *Client) emitDecided(ctx context.Context, k missionKey, a *messages.Approval, as []*messages.Approval, parked *jetstream.RawStreamMsg) (uint64, bool) {
	em := &emitter{nc: c.nc, sub: k.sub, missionID: a.MissionID}
	n, last := parkedEventNumber(parked, as, a.Call)
	if last {
		em.n = n
	} else {
		em.n, _ = lastEventNumber(ctx, c.st.nc, c.st.Events, k)
	}
	n = em.emit(decidedEvent(a))
	for _, r := range as {
		if r.Call != a.Call && r.State == messages.ApprovalPending {
			last = false
		}
	}
	return n, last && n > 0
}

// parkedEventNumber returns the number of the last event of a mission
// parked with message parked, when its mark still holds: its approval
// records as, besides call (the one being decided), have as many decided
// as the run that parked it saw. Another decision since (this decider's
// numbering would repeat its event's number) or a message without a
// mark returns false.
func parkedEventNumber(parked *jetstream.RawStreamMsg, as []*messages.Approval, call string) (uint64, bool) {
	if parked == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(parked.Header.Get(messages.HeaderParkedEvent), 10, 64)
	if err != nil || n == 0 {
		return 0, false
	}
	seen, err := strconv.Atoi(parked.Header.Get(messages.HeaderParkedDecided))
	if err != nil {
		return 0, false
	}
	decided := 0
	for _, r := range as {
		if r.Call != call && r.State != messages.ApprovalPending {
			decided++
		}
	}
	return n, decided == seen
}

// parked returns mission id's parked message, or nil when it has none
// (its worker is still suspending it, its deadline woke it, or it
// finished).
func (c *Client) parked(ctx context.Context, id string) (*jetstream.RawStreamMsg, error) {
	raw, err := parkedMessage(ctx, c.st.nc, c.replies, c.st.Parked, id)
	if err != nil {
		return nil, fmt.Errorf("fleet: resume %s: %w", id, err)
	}
	return raw, nil
}

// resume queues a suspended mission again after a decision (wakeParked).
func (c *Client) resume(ctx context.Context, k missionKey, a *messages.Approval) error {
	parked, err := c.parked(ctx, k.id)
	if err != nil {
		return err
	}
	return c.wakeParked(ctx, k, a, parked, nil)
}

// wakeParked queues a suspended mission again after a decision: its
// parked message is published with Msg-Id "<id>/resume/<call>/<decided>"
// (wakeMsgID: a repeated decision queues it once) into MISSIONS
// directly, on its woken subject (wakeWoken), where MISSIONS holds that
// subject and the client's user may publish there (a publish no stream
// answers, MISSIONS electing a leader, is made again for up to
// electionWait); else, or when MISSIONS refuses it (full:
// StoreConfig.MaxQueued), on its wake subject in PARKED, from which a
// worker moves it into MISSIONS once there is room (wakeMover.move).
// When the mission is not parked yet (parked is nil: its worker is still
// suspending it), that worker finds the decision and queues it itself.
// woken (nil: none) holds headers the wake adds.
func (c *Client) wakeParked(ctx context.Context, k missionKey, a *messages.Approval, parked *jetstream.RawStreamMsg, woken nats.Header) error {
	if parked == nil {
		return nil
	}
	msgID := wakeMsgID(k.id, "resume", a)
	if c.wokenDirect(ctx) {
		until := time.Now().Add(electionWait)
		for {
			err := wakeWoken(ctx, c.nc, c.replies, k, a, parked.Data, parked.Header, msgID, woken)
			if err == nil || !wakeRefused(err) {
				return err
			}
			// No stream answered: MISSIONS electing a leader (a node
			// restarting), which takes seconds, is waited out here. The
			// wake goes to PARKED only where MISSIONS refuses it or keeps
			// silent past electionWait (a layout without the woken
			// subjects): a wake there waits for a worker to move it,
			// one more hop.
			if !errors.Is(err, jetstream.ErrNoStreamResponse) || !time.Now().Before(until) {
				break
			}
			t := time.NewTimer(electionRetry)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("fleet: wake %s: %w (no stream answered: %w)", k.id, ctx.Err(), err)
			case <-t.C:
			}
		}
	}
	return wake(ctx, c.js, c.replies, k, a.Priority, parked.Data, parked.Header, msgID, woken)
}

// electionWait bounds how long a decision's wake keeps being published
// into MISSIONS while no stream answers, and electionRetry is the pause
// between tries: a replicated stream whose leader's node went down elects
// another within a few seconds.
const (
	electionWait  = 15 * time.Second
	electionRetry = 250 * time.Millisecond
)

// wokenDirect reports whether the client's decisions publish their wakes
// into MISSIONS directly: the MISSIONS it bound holds
// messages.WokenWildcard (a layout set up before it did takes every
// wake from PARKED), and its NATS user may publish there (asked at the
// first decision, until an answer comes: a NATS configuration older
// than the layout lets the approver publish wakes in PARKED only).
func (c *Client) wokenDirect(ctx context.Context) bool {
	if !missionsHoldWoken(c.st.Missions) {
		return false
	}
	switch c.wokenPublish.Load() {
	case wokenAllowed:
		return true
	case wokenRefused:
		return false
	}
	allowed, known := publishAllowed(ctx, c.nc, messages.WokenSubject(c.sub, messages.PriorityNormal, "probe"))
	if known {
		state := int32(wokenRefused)
		if allowed {
			state = wokenAllowed
		}
		c.wokenPublish.Store(state)
	}
	return allowed
}

// What a client knows of its user's right to publish decisions' wakes
// into MISSIONS (Client.wokenPublish; 0: not asked yet).
const (
	wokenAllowed = 1
	wokenRefused = 2
)

// missionsHoldWoken reports whether missions stream s stores the wakes
// published on messages.WokenWildcard.
func missionsHoldWoken(s jetstream.Stream) bool {
	return s != nil && s.CachedInfo() != nil && slices.Contains(s.CachedInfo().Config.Subjects, messages.WokenWildcard)
}

// publishAllowed reports whether nc's user may publish on subject, a
// subject some stream holds: it publishes there a message that expects
// a stream no layout has (no stream stores it, and no answer is asked
// for), then makes a round trip to the server, after which a refusal
// has come back as the connection's last error. known is false when
// the round trip failed: allowed is then true, and the publish that
// follows says what is wrong.
func publishAllowed(ctx context.Context, nc *nats.Conn, subject string) (allowed, known bool) {
	m := &nats.Msg{Subject: subject, Header: nats.Header{jetstream.ExpectedStreamHeader: {"ptc-permission-probe"}}}
	if err := nc.PublishMsg(m); err != nil {
		return true, false
	}
	if err := flush(ctx, nc); err != nil {
		return true, false
	}
	err := nc.LastError()
	return !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), "Publish to \""+subject+"\""), true
}

// wakeRefused reports whether a wake published into MISSIONS directly
// was not stored and may be published in PARKED instead: MISSIONS
// refused to store it (its limits: MaxQueued with DiscardNew), or no
// stream holds the woken subject (a layout changed back since the
// client bound it).
func wakeRefused(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == errCodeStoreFailed
	}
	return errors.Is(err, jetstream.ErrNoStreamResponse)
}

// errCodeStoreFailed is the JetStream error of a message a stream did
// not store: over its MaxMsgs or MaxBytes with DiscardNew, or a store
// failure.
const errCodeStoreFailed = 10077

// wakeMsgID is the Msg-Id of a wake of mission id after the decision
// of call a, "<id>/<kind>/<call>/<decided>": the same for every wake of
// that decision, so that MISSIONS' duplicate window (or PARKED's)
// queues it once, and unknown before the decision is recorded, since
// <decided> is its time to the nanosecond (base 36). A submitter may
// publish on its own submit subject with any Msg-Id: one that named a
// wake before its decision would have MISSIONS drop the wake (PARKED's
// copy is moved under a Msg-Id of its own) as a duplicate and leave the
// mission to its deadline.
func wakeMsgID(id, kind string, a *messages.Approval) string {
	return id + "/" + kind + "/" + a.Call + "/" + strconv.FormatInt(a.DecidedAt.UnixNano(), 36)
}

// wakeWoken publishes a decided mission's message (data, with the
// headers of hdr that travel with a mission, and those of extra) on its
// woken subject, which MISSIONS stores in the lane a submit of the
// mission takes, marked messages.HeaderWoken (the decided call) so that
// its claim knows it has a status, with Msg-Id msgID under MISSIONS'
// duplicate window. The publish's request goes on replies when it is
// nc's reply mux (publishAckedOn).
func wakeWoken(ctx context.Context, nc *nats.Conn, replies *replyMux, k missionKey, a *messages.Approval, data []byte, hdr nats.Header, msgID string, extra nats.Header) error {
	msg := wakeMsg(messages.WokenSubject(k.sub, a.Priority, k.id), data, hdr, msgID, extra)
	msg.Header.Set(messages.HeaderWoken, a.Call)
	if _, err := publishAckedOn(ctx, nc, replies, msg); err != nil {
		return fmt.Errorf("fleet: wake %s: %w", k.id, err)
	}
	return nil
}

// wake publishes a suspended mission's message on its wake subject,
// with the headers of hdr that travel with a mission and those of extra,
// its request on replies when it is js's connection's reply mux.
func wake(ctx context.Context, js jetstream.JetStream, replies *replyMux, k missionKey, priority string, data []byte, hdr nats.Header, msgID string, extra nats.Header) error {
	msg := wakeMsg(messages.WakeSubject(k.sub, priority, k.id), data, hdr, msgID, extra)
	msg.Header.Set(jetstream.MsgTTLHeader, wakeTTL)
	if _, err := publishAckedOn(ctx, js.Conn(), replies, msg); err != nil {
		return fmt.Errorf("fleet: wake %s: %w", k.id, err)
	}
	return nil
}

// wakeNow queues a parked mission's message (data, with the headers of
// hdr that travel with a mission) again at once from a worker: a quota's
// lease given back, a decision found after parking. It goes into
// MISSIONS directly on its woken subject, with Msg-Id msgID and the
// headers of extra, which make the claim take it as a wake (as a
// decider's: wakeParked); where MISSIONS does not take it within
// wakeNowWait (full, or electing a leader), on its wake subject in
// PARKED, from which a worker moves it (one more hop). A copy stored in
// both is dropped by the claim as a duplicate: the status names the
// copy that resumed the mission.
func wakeNow(ctx context.Context, js jetstream.JetStream, replies *replyMux, k missionKey, priority string, data []byte, hdr nats.Header, msgID string, extra nats.Header) error {
	wctx, cancel := context.WithTimeout(ctx, wakeNowWait)
	_, err := publishAckedOn(wctx, js.Conn(), replies, wakeMsg(messages.WokenSubject(k.sub, priority, k.id), data, hdr, msgID, extra))
	cancel()
	if err == nil {
		return nil
	}
	if perr := wake(ctx, js, replies, k, priority, data, hdr, msgID, nil); perr != nil {
		return fmt.Errorf("fleet: wake %s: into MISSIONS: %w; into PARKED: %w", k.id, err, perr)
	}
	return nil
}

// wakeNowWait bounds wakeNow's publish into MISSIONS, so that its
// fallback into PARKED has time left within the caller's.
const wakeNowWait = 3 * time.Second

// wakeMsg is a suspended mission's message (data) queued again on
// subject: with the headers of hdr that travel with a mission, those of
// extra, and Msg-Id msgID.
func wakeMsg(subject string, data []byte, hdr nats.Header, msgID string, extra nats.Header) *nats.Msg {
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	for _, name := range []string{messages.HeaderMissionID, messages.HeaderContentType, messages.HeaderTraceParent, messages.HeaderTraceState} {
		if v := hdr.Get(name); v != "" {
			msg.Header.Set(name, v)
		}
	}
	for name := range extra {
		msg.Header.Set(name, extra.Get(name))
	}
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	return msg
}

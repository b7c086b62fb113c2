package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// defaultDecider is who decides when -by is not given: the OS user.
func defaultDecider(e env) string {
	if e.lookup != nil {
		if v, ok := e.lookup("USER"); ok && v != "" {
			return v
		}
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}

// parseDecisionArgs reads -args: a JSON object, numbers kept exact.
func parseDecisionArgs(s string) (map[string]any, error) {
	if s == "" {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("-args: not JSON: %w", err)
	}
	if d.More() {
		return nil, fmt.Errorf("-args: more than one JSON value")
	}
	plain, err := messages.FromJSON(v)
	if err != nil {
		return nil, fmt.Errorf("-args: %w", err)
	}
	m, ok := plain.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("-args: %s is not a JSON object of the call's arguments", s)
	}
	return m, nil
}

// decide approves or denies a call of mission id and prints the record.
func decide(ctx context.Context, client *fleet.Client, id, call string, approve bool, args, reason, by string, w io.Writer) error {
	edited, err := parseDecisionArgs(args)
	if err != nil {
		return err
	}
	a, err := client.Decide(ctx, id, fleet.Decision{Approve: approve, Call: call, Args: edited, Reason: reason, By: by})
	if errors.Is(err, fleet.ErrQueuedAgain) {
		// a stalled mission (its wake lost) resumes with the decision
		// recorded before: what the command was run for
		fmt.Fprintf(w, "%s: %v\n", id, err)
		return nil
	}
	if err != nil {
		return err
	}
	printDecided(w, a)
	return nil
}

// printDecided prints a decided call: its mission resumes.
func printDecided(w io.Writer, a *messages.Approval) {
	fmt.Fprintf(w, "%s %s %s %s by %s; the mission resumes\n", a.MissionID, a.Call, a.Tool, a.State, a.DecidedBy)
}

// approvalItem is an approval as the JSON output shows it.
type approvalItem struct {
	MissionID   string         `json:"mission_id"`
	Call        string         `json:"call"`
	State       string         `json:"state"`
	Tool        string         `json:"tool"`
	Service     string         `json:"service,omitempty"`
	Args        map[string]any `json:"args"`
	Turn        int            `json:"turn,omitempty"`
	Program     string         `json:"program,omitempty"`
	Position    string         `json:"position,omitempty"`
	Rule        string         `json:"rule,omitempty"`
	RequestedAt time.Time      `json:"requested_at"`
	Deadline    time.Time      `json:"deadline"`
	DecidedBy   string         `json:"decided_by,omitempty"`
	DecidedAt   *time.Time     `json:"decided_at,omitempty"`
	Reason      string         `json:"reason,omitempty"`
	EditedArgs  map[string]any `json:"edited_args,omitempty"`
}

func approvalItems(as []*messages.Approval) []approvalItem {
	out := make([]approvalItem, 0, len(as))
	for _, a := range as {
		it := approvalItem{MissionID: a.MissionID, Call: a.Call, State: a.State, Tool: a.Tool, Service: a.Service, Args: a.Args, Turn: a.Turn,
			Program: a.Program, Position: a.Position, Rule: a.Rule, RequestedAt: a.RequestedAt, Deadline: a.Deadline, DecidedBy: a.DecidedBy,
			Reason: a.Reason, EditedArgs: a.EditedArgs}
		if !a.DecidedAt.IsZero() {
			t := a.DecidedAt
			it.DecidedAt = &t
		}
		out = append(out, it)
	}
	return out
}

// pendingOut is the calls waiting for a decision across the fleet: the
// listed ones, and how many wait in all; and the missions stalled after
// a decision.
type pendingOut struct {
	Waiting   int            `json:"waiting" jsonschema:"how many calls wait in all (of those the selection, if any, selects); approvals lists the longest waiting of them"`
	Approvals []approvalItem `json:"approvals"`
	Stalled   []approvalItem `json:"stalled,omitempty" jsonschema:"calls decided a minute ago or more whose mission still waits with no call pending (its wake was lost); approving or denying the mission again, with no call named, queues it with the recorded decision"`
}

// defaultStalledAfter is how long after its decision a call whose
// mission still waits, with no call pending, is listed as stalled: a
// wake takes milliseconds to queue its mission, and the workers' sweep
// queues such a mission after this long by default.
const defaultStalledAfter = fleet.DefaultStalledAfter

// checkStalledAfter refuses a stalled-after threshold (named by what)
// shorter than the fleet's least period, fleet.MinStalledAfter.
func checkStalledAfter(what string, d time.Duration) error {
	if d < fleet.MinStalledAfter {
		return fmt.Errorf("%s %s: want at least %s", what, d, fleet.MinStalledAfter)
	}
	return nil
}

// listPending reads the calls waiting for a decision that f selects (at
// most limit of them, and how many f selects in all) and the calls whose
// missions stalled after their decision (decided at least stalledAfter
// ago; all of them, whatever f selects).
func listPending(ctx context.Context, c *fleet.Client, f fleet.PendingFilter, limit int, stalledAfter time.Duration) (out pendingOut, as, stalled []*messages.Approval, err error) {
	as, n, err := c.ListPending(ctx, f, limit)
	if err != nil {
		return out, nil, nil, err
	}
	if stalled, err = c.StalledApprovals(ctx, stalledAfter); err != nil {
		return out, nil, nil, err
	}
	out = pendingOut{Waiting: n, Approvals: approvalItems(as)}
	if len(stalled) > 0 {
		out.Stalled = approvalItems(stalled)
	}
	return out, as, stalled, nil
}

// printStalled prints the calls whose missions stalled after their
// decision, each with the command that queues its mission again.
func printStalled(w io.Writer, stalled []*messages.Approval) {
	now := time.Now()
	for _, a := range stalled {
		fmt.Fprintf(w, "%s %s  %s %s by %s %s ago; the mission still waits, its wake lost\n  queue it again (the decision stands): dispatcher approve %s\n",
			a.MissionID, a.Call, a.Tool, a.State, a.DecidedBy, fmtDuration(now.Sub(a.DecidedAt)), a.MissionID)
	}
}

// printPending prints the calls waiting for a decision across the fleet
// (n of them in all), one block each, with the command that decides it.
func printPending(w io.Writer, as []*messages.Approval, n int) {
	if n == 0 {
		fmt.Fprintln(w, "no tool call waits for a decision")
		return
	}
	now := time.Now()
	for _, a := range as {
		fmt.Fprintf(w, "%s %s  %s %s  turn %d\n", a.MissionID, a.Call, a.Tool, maskedPreview(a.Args, 300), a.Turn)
		fmt.Fprintf(w, "  rule: %s; waiting %s", a.Rule, fmtDuration(now.Sub(a.RequestedAt)))
		switch left := a.Deadline.Sub(now); {
		case a.Deadline.IsZero():
		case left > 0:
			fmt.Fprintf(w, ", denied as %s in %s", messages.ReasonApprovalTimeout, fmtDuration(left))
		default:
			// the deadline's wake queues the mission, whose worker then
			// denies the call; a wake held in PARKED leaves it waiting
			// (docs/approvals.md, "Guarantees"), which deciding ends
			fmt.Fprintf(w, ", deadline passed %s ago (denied as %s once a worker takes the mission; still listed, decide it)",
				fmtDuration(-left), messages.ReasonApprovalTimeout)
		}
		if a.Submitter != "" {
			fmt.Fprintf(w, "; submitter %s", a.Submitter)
		}
		fmt.Fprintf(w, "\n  %s\n", decideCommand("", a.MissionID, a.Call))
	}
	if len(as) < n {
		fmt.Fprintf(w, "%d of %d waiting calls shown (-limit)\n", len(as), n)
	}
}

// watchPending prints the calls waiting for a decision (list), then, looking
// every interval until ctx ends, each call as it starts waiting, with the
// command that decides it, and as it stops (decided, or its mission
// ended). A listing that fails is reported and tried again at the next
// look.
func watchPending(ctx context.Context, list func(context.Context) ([]*messages.Approval, int, error), every time.Duration, w io.Writer) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var seen map[string]*messages.Approval // by mission and call
	for {
		as, n, err := list(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			fmt.Fprintf(w, "%s listing failed, trying again: %v\n", time.Now().Format("15:04:05"), err)
		case seen == nil:
			printPending(w, as, n)
			seen = pendingByCall(as)
		default:
			now := pendingByCall(as)
			at := time.Now().Format("15:04:05")
			for _, a := range as {
				if seen[callKey(a)] == nil {
					fmt.Fprintf(w, "%s waiting: %s  %s %s\n  %s\n", at, callKey(a), a.Tool, maskedPreview(a.Args, 300), decideCommand("", a.MissionID, a.Call))
				}
			}
			for _, k := range slices.Sorted(maps.Keys(seen)) {
				if now[k] == nil {
					fmt.Fprintf(w, "%s no longer waiting: %s %s\n", at, k, seen[k].Tool)
				}
			}
			seen = now
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// refusedRead explains err, a listing that failed, when NATS refused nc's
// user a read meanwhile: the waiting calls are listed from every
// submitter's missions, which only the approver (or a user granted every
// submitter's) may read.
func refusedRead(nc *nats.Conn, err error) error {
	if last := nc.LastError(); err != nil && errors.Is(last, nats.ErrPermissionViolation) {
		return fmt.Errorf("%w (NATS refused this user a read: %v; list the waiting calls as the approver user)", err, last)
	}
	return err
}

// pendingByCall indexes approval records by callKey.
func pendingByCall(as []*messages.Approval) map[string]*messages.Approval {
	m := make(map[string]*messages.Approval, len(as))
	for _, a := range as {
		m[callKey(a)] = a
	}
	return m
}

// callKey names a call across the fleet: "<mission> <call>".
func callKey(a *messages.Approval) string { return a.MissionID + " " + a.Call }

// decideCommand is the command that decides call of mission id, as the
// progress and the listings print it; natsFlag, when not empty, is the
// flag (with its trailing space) that reaches the server from another
// terminal.
func decideCommand(natsFlag, id, call string) string {
	return "dispatcher approve|deny " + natsFlag + id + " " + call
}

// printApprovals prints a mission's approvals, one block each.
func printApprovals(w io.Writer, as []*messages.Approval) {
	if len(as) == 0 {
		fmt.Fprintln(w, "no tool call of this mission needed approval")
		return
	}
	for _, a := range as {
		fmt.Fprintf(w, "%s  %s %s  turn %d  %s\n", a.Call, a.State, a.Tool, a.Turn, maskedPreview(a.Args, 300))
		fmt.Fprintf(w, "  rule: %s; requested %s, deadline %s\n", a.Rule, a.RequestedAt.Format(time.RFC3339), a.Deadline.Format(time.RFC3339))
		if a.Position != "" {
			fmt.Fprintf(w, "  at %s of the program%s\n", a.Position, strings.ReplaceAll(callSnippet(a.Program, a.Position), "\n", "\n  "))
		}
		if a.State != messages.ApprovalPending {
			fmt.Fprintf(w, "  %s\n", decisionLine(a))
		}
	}
}

// callSnippet is the line of program holding the call at position
// ("line:column") with a caret under the call (lisp.Snippet); "" when
// position is not one or not in program.
func callSnippet(program, position string) string {
	var p lisp.Pos
	if n, err := fmt.Sscanf(position, "%d:%d", &p.Line, &p.Col); n != 2 || err != nil {
		return ""
	}
	return lisp.Snippet(program, p)
}

// decisionLine says who decided a call, when, why and what they changed.
func decisionLine(a *messages.Approval) string {
	s := fmt.Sprintf("%s by %s at %s", a.State, a.DecidedBy, a.DecidedAt.Format(time.RFC3339))
	if a.Reason != "" {
		s += ": " + a.Reason
	}
	if a.EditedArgs != nil {
		s += "; arguments changed to " + maskedPreview(a.EditedArgs, 300)
	}
	return s
}

// pendingSelection is approve's and deny's -pending: the calls waiting
// for a decision that its flags select, decided at once.
type pendingSelection struct {
	on                       bool
	tool, service, submitter string
	when                     string
	max                      int
	dryRun                   bool
	asJSON                   bool
}

// filterFlags names the flags that select waiting calls
// (registerFilter).
var filterFlags = []string{"tool", "service", "submitter", "when"}

// pendingFlags names the flags that select calls or shape what -pending
// prints, which go with it only.
var pendingFlags = append(slices.Clone(filterFlags), "max", "dry-run", "json")

func (p *pendingSelection) register(fs *flag.FlagSet, cmd string) {
	fs.BoolVar(&p.on, "pending", false, "without a mission id: "+cmd+" every call waiting for a decision that the flags below select, the longest waiting first")
	p.registerFilter(fs, "with -pending")
	fs.IntVar(&p.max, "max", 0, "with -pending: at most this many calls, the longest waiting first (0: all selected)")
	fs.BoolVar(&p.dryRun, "dry-run", false, "with -pending: list the calls selected, decide none")
	fs.BoolVar(&p.asJSON, "json", false, "with -pending: print what was decided as JSON ({decided, not_decided, not_queued, selected}, as MCP's approve_pending)")
}

// registerFilter registers the flags that select waiting calls (tool,
// service, submitter, when), each said to go with when.
func (p *pendingSelection) registerFilter(fs *flag.FlagSet, when string) {
	fs.StringVar(&p.tool, "tool", "", when+": only calls of this tool")
	fs.StringVar(&p.service, "service", "", when+": only calls served by this tool service")
	fs.StringVar(&p.submitter, "submitter", "", when+": only calls of this submitter's missions")
	fs.StringVar(&p.when, "when", "", when+`: only calls whose arguments meet this JSON condition, e.g. {"arg":"amount","op":"<=","value":100}; a call without the argument is left out`)
}

// check refuses flags that select calls without -pending, and -pending
// with what decides one call (a mission id, -args).
func (p *pendingSelection) check(fs *flag.FlagSet, rest []string, editArgs string) error {
	if !p.on {
		if set := setFlags(fs, pendingFlags); len(set) > 0 {
			return fmt.Errorf("%s only go with -pending (deciding at once the waiting calls its flags select): add -pending, or decide one call by its mission id without them", strings.Join(set, ", "))
		}
		return nil
	}
	if len(rest) > 0 {
		return fmt.Errorf("-pending decides the calls its flags select: give no mission id (got %s)", strings.Join(rest, " "))
	}
	if editArgs != "" {
		return errors.New("-args edits one call's arguments: decide that call on its own, not with -pending")
	}
	return nil
}

// selects reports whether a flag of registerFilter selects calls.
func (p *pendingSelection) selects() bool {
	return p.tool != "" || p.service != "" || p.submitter != "" || strings.TrimSpace(p.when) != ""
}

// checkListing refuses, for approvals, flags that select waiting calls
// with a mission id: they select among the calls waiting across the
// fleet.
func (p *pendingSelection) checkListing(fs *flag.FlagSet, rest []string) error {
	if len(rest) == 0 {
		return nil
	}
	if set := setFlags(fs, filterFlags); len(set) > 0 {
		return fmt.Errorf("%s select among the calls waiting across the fleet: give no mission id (got %s)", strings.Join(set, ", "), strings.Join(rest, " "))
	}
	return nil
}

// setFlags returns those of names that were set on fs's command line,
// each as "-name".
func setFlags(fs *flag.FlagSet, names []string) []string {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(names, f.Name) {
			set = append(set, "-"+f.Name)
		}
	})
	return set
}

// filter is the selection as the fleet applies it.
func (p *pendingSelection) filter() (fleet.PendingFilter, error) {
	f := fleet.PendingFilter{Tool: p.tool, Service: p.service, Submitter: p.submitter, Max: p.max}
	var err error
	if f.When, err = parseCond(p.when); err != nil {
		return f, fmt.Errorf("-when: %w", err)
	}
	return f, nil
}

// parseCond parses a condition on a call's arguments written as JSON
// (-when, the viewer's filter): nil for blank text.
func parseCond(s string) (*messages.ApprovalCond, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	c := new(messages.ApprovalCond)
	if err := d.Decode(c); err != nil {
		return nil, fmt.Errorf(`not a JSON condition such as {"arg":"amount","op":"<=","value":100}: %w`, err)
	}
	if d.More() {
		return nil, errors.New("more than one JSON value")
	}
	return c, nil
}

// decidePending approves or denies the calls waiting for a decision that
// sel selects, printing a line for each and a summary, or, with
// -dry-run, lists them. It fails when a selected call was not decided.
func decidePending(ctx context.Context, client *fleet.Client, sel pendingSelection, approve bool, reason, by string, w io.Writer) error {
	f, err := sel.filter()
	if err != nil {
		return err
	}
	verb := "denied"
	if approve {
		verb = "approved"
	}
	if sel.dryRun {
		as, err := client.SelectPending(ctx, f)
		if err != nil {
			return err
		}
		if sel.asJSON {
			return writeJSONTo(w, decidedOut{Decided: []approvalItem{}, Selected: approvalItems(as)}, "  ")
		}
		if len(as) == 0 {
			fmt.Fprintln(w, "no waiting call is selected")
			return nil
		}
		printPending(w, as, len(as))
		fmt.Fprintf(w, "%d calls would be %s (-dry-run: none decided)\n", len(as), verb)
		return nil
	}
	out, err := client.DecidePending(ctx, f, fleet.Decision{Approve: approve, Reason: reason, By: by})
	if err != nil {
		return err
	}
	if sel.asJSON {
		items := decidedItems(out)
		if err := writeJSONTo(w, items, "  "); err != nil {
			return err
		}
		if n := len(items.NotDecided) + len(items.NotQueued); n > 0 {
			return fmt.Errorf("%d of %d calls selected not decided or their mission not queued", n, len(out))
		}
		return nil
	}
	if len(out) == 0 {
		fmt.Fprintln(w, "no waiting call is selected: none decided")
		return nil
	}
	failed, unqueued := 0, 0
	for _, o := range out {
		switch {
		case o.Err != nil && o.Decided != nil:
			unqueued++
			fmt.Fprintf(w, "%s %s %s %s by %s; its mission not queued: %v (it resumes at its deadline, at the workers' sweep, or when decided again)\n",
				o.Call.MissionID, o.Call.Call, o.Call.Tool, o.Decided.State, o.Decided.DecidedBy, o.Err)
		case o.Err != nil:
			failed++
			fmt.Fprintf(w, "%s %s %s: not decided: %v\n", o.Call.MissionID, o.Call.Call, o.Call.Tool, o.Err)
		default:
			printDecided(w, o.Decided)
		}
	}
	fmt.Fprintf(w, "%s %d of %d calls selected\n", verb, len(out)-failed, len(out))
	if failed+unqueued > 0 {
		return fmt.Errorf("%d of %d calls selected not decided, %d decided with their mission not queued", failed, len(out), unqueued)
	}
	return nil
}

// decidedOut is what a decision of many calls did (MCP's approve_pending
// and deny_pending, the viewer's Approve selected and Deny selected).
type decidedOut struct {
	Decided    []approvalItem   `json:"decided" jsonschema:"the calls decided, the longest waiting first, each as its record now reads"`
	NotDecided []notDecidedItem `json:"not_decided,omitempty" jsonschema:"the calls selected but not decided, and why"`
	NotQueued  []notDecidedItem `json:"not_queued,omitempty" jsonschema:"the calls decided (also in decided) whose mission was not queued again, and why: it resumes at its deadline, at the workers' sweep for stalled decisions, or when decided again"`
	Selected   []approvalItem   `json:"selected,omitempty" jsonschema:"with dry_run: the calls that would be decided"`
}

// notDecidedItem is a call selected but not decided, or decided with
// its mission not queued.
type notDecidedItem struct {
	MissionID string `json:"mission_id"`
	Call      string `json:"call"`
	Tool      string `json:"tool"`
	Error     string `json:"error"`
}

// decidedItems is what DecidePending did, as decidedOut shows it.
func decidedItems(results []fleet.DecideOutcome) decidedOut {
	out := decidedOut{Decided: []approvalItem{}}
	var decided []*messages.Approval
	for _, r := range results {
		switch {
		case r.Err != nil && r.Decided != nil:
			out.NotQueued = append(out.NotQueued, notDecidedItem{MissionID: r.Call.MissionID, Call: r.Call.Call, Tool: r.Call.Tool, Error: r.Err.Error()})
			decided = append(decided, r.Decided)
		case r.Err != nil:
			out.NotDecided = append(out.NotDecided, notDecidedItem{MissionID: r.Call.MissionID, Call: r.Call.Call, Tool: r.Call.Tool, Error: r.Err.Error()})
		default:
			decided = append(decided, r.Decided)
		}
	}
	out.Decided = approvalItems(decided)
	return out
}

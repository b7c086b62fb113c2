package messages

import (
	"fmt"
	"strings"
	"time"
)

// ApprovalVersion is the version of the Approval layout.
const ApprovalVersion = 1

// Approval states recorded in Approval.State.
const (
	// ApprovalPending: the call waits for a decision; its mission is
	// suspended (StateAwaitingApproval).
	ApprovalPending = "pending"
	// ApprovalApproved: the call runs, with Args when the approver edited
	// them.
	ApprovalApproved = "approved"
	// ApprovalDenied: the call fails with a ToolErrDenied tool error
	// naming Reason.
	ApprovalDenied = "denied"
)

// ReasonApprovalTimeout is the Reason of a call denied because no decision
// came before its deadline.
const ReasonApprovalTimeout = "approval_timeout"

// DefaultApprovalTimeout is how long a call waits for a decision when
// neither the mission nor the worker sets a deadline.
const DefaultApprovalTimeout = 24 * time.Hour

// Bounds of an approval policy.
const (
	// MaxApprovalRules bounds the rules of one policy.
	MaxApprovalRules = 64
	// MaxApprovalReason bounds a decision's reason, and the name of who
	// decided, in bytes.
	MaxApprovalReason = 1 << 10
)

// ApprovalPolicy says which tool calls of a mission wait for a person's
// approval (docs/approvals.md). A mission's policy adds to the worker's
// and the tool services' own rules; it cannot remove them.
type ApprovalPolicy struct {
	// Rules mark calls that need approval; a call needs it when any rule
	// matches.
	Rules []ApprovalRule `msgpack:"rules,omitempty"`
	// Timeout is how long a call waits for a decision before it is denied
	// with ReasonApprovalTimeout; 0: the worker's default
	// (DefaultApprovalTimeout unless the operator sets another).
	Timeout time.Duration `msgpack:"timeout,omitempty"`
}

// ApprovalRule marks the calls of one tool (or of every tool of a
// service) as needing approval: every call, or those whose arguments meet
// When.
type ApprovalRule struct {
	// Tool is the tool's name; "" with Service set: every tool of the
	// service.
	Tool string `msgpack:"tool,omitempty"`
	// Service is the tool service's name; "" matches any service.
	Service string `msgpack:"service,omitempty"`
	// When limits the rule to calls whose arguments meet it; nil: every
	// call.
	When *ApprovalCond `msgpack:"when,omitempty"`
}

// ApprovalCond is a test of one argument of a call: Arg (a key, or a path
// of keys joined by '.', into the arguments) compared with Value by Op.
// Numbers compare as numbers, strings as strings; "=" and "!=" compare
// any values. A call whose argument is missing, or not comparable with
// Value by an ordering Op, meets the condition: a rule errs on the side of
// asking.
type ApprovalCond struct {
	Arg   string `msgpack:"arg"`
	Op    string `msgpack:"op"`
	Value any    `msgpack:"value"`
}

// ApprovalOps lists the operators of an ApprovalCond.
var ApprovalOps = []string{">", ">=", "<", "<=", "=", "!="}

// Validate checks a policy; path names it in errors ("mission.approval").
func (p *ApprovalPolicy) Validate(path string) error {
	if p == nil {
		return nil
	}
	if p.Timeout < 0 {
		return invalidf("%s.timeout: negative", path)
	}
	if len(p.Rules) > MaxApprovalRules {
		return invalidf("%s.rules: %d rules, at most %d", path, len(p.Rules), MaxApprovalRules)
	}
	for i, r := range p.Rules {
		if err := r.Validate(fmt.Sprintf("%s.rules[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a rule; path names it in errors.
func (r *ApprovalRule) Validate(path string) error {
	if r.Tool == "" && r.Service == "" {
		return invalidf("%s: names neither a tool nor a service", path)
	}
	if r.Tool != "" && !ValidName(r.Tool) {
		return invalidf("%s.tool: %q is not a valid tool name", path, r.Tool)
	}
	if r.Service != "" && !ValidName(r.Service) {
		return invalidf("%s.service: %q is not a valid service name", path, r.Service)
	}
	return r.When.Validate(path + ".when")
}

// Validate checks a condition; path names it in errors.
func (c *ApprovalCond) Validate(path string) error {
	if c == nil {
		return nil
	}
	if c.Arg == "" || strings.HasPrefix(c.Arg, ".") || strings.HasSuffix(c.Arg, ".") || strings.Contains(c.Arg, "..") {
		return invalidf("%s.arg: %q is not a key or a path of keys joined by '.'", path, c.Arg)
	}
	ok := false
	for _, op := range ApprovalOps {
		ok = ok || c.Op == op
	}
	if !ok {
		return invalidf("%s.op: %q is not one of %s", path, c.Op, strings.Join(ApprovalOps, " "))
	}
	switch c.Value.(type) {
	case nil, bool, string, int64, float64, int, uint64:
	default:
		return invalidf("%s.value: %T is not a number, string, boolean or null", path, c.Value)
	}
	if c.Op != "=" && c.Op != "!=" {
		switch c.Value.(type) {
		case string, int64, float64, int, uint64:
		default:
			return invalidf("%s.value: %s compares numbers or strings, not %v", path, c.Op, c.Value)
		}
	}
	return nil
}

// Matches reports whether a call of tool, served by service, with args
// (plain data) needs approval under r.
func (r *ApprovalRule) Matches(tool, service string, args map[string]any) bool {
	if r.Tool != "" && r.Tool != tool {
		return false
	}
	if r.Service != "" && r.Service != service {
		return false
	}
	return r.When.Meets(args)
}

// Meets reports whether args meet the condition (nil: always). A
// missing argument, or one an ordering Op cannot compare with Value,
// meets it: a rule errs on the side of asking.
func (c *ApprovalCond) Meets(args map[string]any) bool { return c.test(args, true) }

// Holds reports whether args meet the condition (nil: always), erring
// the other way from Meets: a missing argument, or one an ordering Op
// cannot compare with Value, does not hold it. A selection of calls to
// decide at once uses it, so that a call it cannot judge is left to a
// decision of its own.
func (c *ApprovalCond) Holds(args map[string]any) bool { return c.test(args, false) }

// test is Meets (unjudged true) or Holds (unjudged false).
func (c *ApprovalCond) test(args map[string]any, unjudged bool) bool {
	if c == nil {
		return true
	}
	var v any = args
	for key := range strings.SplitSeq(c.Arg, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return unjudged
		}
		if v, ok = m[key]; !ok {
			return unjudged
		}
	}
	switch c.Op {
	case "=":
		return equalScalar(v, c.Value)
	case "!=":
		return !equalScalar(v, c.Value)
	}
	cmp, ok := compareScalar(v, c.Value)
	if !ok {
		return unjudged
	}
	switch c.Op {
	case ">":
		return cmp > 0
	case ">=":
		return cmp >= 0
	case "<":
		return cmp < 0
	default:
		return cmp <= 0
	}
}

// asFloat returns a number as float64.
func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func compareScalar(a, b any) (int, bool) {
	if x, ok := asFloat(a); ok {
		y, ok := asFloat(b)
		if !ok {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	}
	x, ok := a.(string)
	y, ok2 := b.(string)
	if !ok || !ok2 {
		return 0, false
	}
	return strings.Compare(x, y), true
}

func equalScalar(a, b any) bool {
	if c, ok := compareScalar(a, b); ok {
		return c == 0
	}
	return a == b
}

// Approval is one tool call that needed approval: the request and, once
// made, the decision. It is the value of the call's key in BucketApprovals
// (ApprovalKey) and the audit record a Step's trace, the events and the
// viewer show.
type Approval struct {
	Version   int    `msgpack:"v"`
	MissionID string `msgpack:"mission_id"`
	// Call identifies the call within its mission: "<turn>.<digest>.<n>",
	// the same on every run of the mission (ApprovalKey).
	Call string `msgpack:"call"`
	// State is ApprovalPending, ApprovalApproved or ApprovalDenied.
	State string `msgpack:"state"`
	// Tool and Service name the tool called.
	Tool    string `msgpack:"tool"`
	Service string `msgpack:"service,omitempty"`
	// Args are the call's arguments as the program made them, firewalled
	// values masked (FirewallMask).
	Args map[string]any `msgpack:"args"`
	// Turn is the mission turn that made the call.
	Turn int `msgpack:"turn,omitempty"`
	// Program is the program that made the call, when the runner reports
	// it; Position is the call's place in it ("line:column"), when known.
	Program  string `msgpack:"program,omitempty"`
	Position string `msgpack:"position,omitempty"`
	// Rule says which rule asked for approval ("mission", "worker",
	// "service") and how.
	Rule string `msgpack:"rule,omitempty"`
	// Priority is the mission's priority (where its resumption is queued).
	Priority string `msgpack:"priority,omitempty"`
	// Submitter is the mission's submitter (whose subjects its wake and
	// events are on), so that a decider needs no read of its status.
	Submitter string `msgpack:"submitter,omitempty"`
	// RequestedAt and Deadline bound the wait: a call still pending at
	// Deadline is denied with ReasonApprovalTimeout.
	RequestedAt time.Time `msgpack:"requested_at"`
	Deadline    time.Time `msgpack:"deadline"`
	// DecidedBy, DecidedAt and Reason record the decision; EditedArgs are
	// the arguments the approver gave in place of Args (nil: unchanged).
	DecidedBy  string         `msgpack:"decided_by,omitempty"`
	DecidedAt  time.Time      `msgpack:"decided_at,omitempty"`
	Reason     string         `msgpack:"reason,omitempty"`
	EditedArgs map[string]any `msgpack:"edited_args,omitempty"`
}

// Validate checks an approval record.
func (a *Approval) Validate() error {
	if a == nil {
		return invalidf("approval is nil")
	}
	if a.Version < 0 || a.Version > ApprovalVersion {
		return invalidf("approval.v: version %d not supported (max %d)", a.Version, ApprovalVersion)
	}
	if !ValidMissionID(a.MissionID) {
		return invalidf("approval.mission_id: %q is not a ULID", a.MissionID)
	}
	if !ValidApprovalCall(a.Call) {
		return invalidf("approval.call: %q is not <turn>.<digest>.<n>", a.Call)
	}
	switch a.State {
	case ApprovalPending, ApprovalApproved, ApprovalDenied:
	default:
		return invalidf("approval.state: %q is not pending, approved or denied", a.State)
	}
	return nil
}

// ValidApprovalCall reports whether s is a call id of ApprovalKey's form.
func ValidApprovalCall(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" {
			return false
		}
		for _, r := range p {
			if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
				return false
			}
		}
	}
	return true
}

// ApprovalKey is the key of a call's record in BucketApprovals:
// "<mission id>.<call>".
func ApprovalKey(missionID, call string) string { return missionID + "." + call }

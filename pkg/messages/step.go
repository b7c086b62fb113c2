package messages

import (
	"errors"
	"fmt"
	"time"
)

// StepVersion is the version of the Step layout written by this package.
// Decoders accept any version up to and including it.
const StepVersion = 1

// Step is the one result type of the system: a scripted PTC-Lisp run
// (lisp.Run), an agent run and a fleet mission all return one.
//
// Exactly one of Return and Fail is meaningful: a run succeeded when Fail is
// nil. Return holds plain Go data (nil, bool, int64, float64, string, []any,
// map[string]any). Firewalled fields (keys starting with "_") are kept here:
// the firewall applies to text sent to a model, not to Go callers.
//
// A Step is a value: it is safe to read from many goroutines once the run that
// produced it has returned, and it is not modified afterwards.
type Step struct {
	// Version is the layout version; Marshal sets it to StepVersion when zero.
	Version int `msgpack:"v"`
	// Return is the value the run returned, when it succeeded.
	Return any `msgpack:"return"`
	// Fail describes why the run failed; nil on success.
	Fail *Fail `msgpack:"fail,omitempty"`
	// Signature is the contract the run was held to, in canonical signature
	// syntax ("(query :string) -> {count :int}"); empty when there was none.
	Signature string `msgpack:"signature,omitempty"`
	// Memory is the agent's memory after the run (names to values).
	Memory map[string]any `msgpack:"memory,omitempty"`
	// Usage aggregates resource use over the whole run.
	Usage Usage `msgpack:"usage"`
	// Trace is the turn-by-turn history (empty when tracing was off).
	Trace []Turn `msgpack:"trace,omitempty"`
	// Prints holds the println output of a scripted run, one entry a line.
	// Agent runs keep println output per turn in Trace.
	Prints []string `msgpack:"prints,omitempty"`
	// Warnings are non-fatal notes (coercions, validation in warn_only mode).
	Warnings []string `msgpack:"warnings,omitempty"`
	// Mode is the output mode that produced the Step: "ptc_lisp" (the default
	// when empty) or "text".
	Mode string `msgpack:"mode,omitempty"`
	// Text is the model's final raw answer in text mode (also the Return of a
	// plain-text agent); empty otherwise.
	Text string `msgpack:"text,omitempty"`
	// Plan is the state of the agent's plan when the run ended (every
	// step, done or not, with its summary); empty without a plan.
	Plan []PlanStep `msgpack:"plan,omitempty"`
	// Attempts is the number of deliveries of a fleet mission that ran it
	// (1 when it ran once); 0 outside the fleet.
	Attempts int `msgpack:"attempts,omitempty"`
	// Replayed counts what a redelivered fleet mission took from its turn
	// journal instead of doing it again; nil when nothing was replayed.
	Replayed *Replayed `msgpack:"replayed,omitempty"`
	// Stored, on a result message, names the object in BucketResults that
	// holds the whole Step, encoded as MarshalStep does, when it is too
	// large for one message (its return, memory or trace); the message's
	// other fields are then empty. A fleet.Client reads the object in its
	// place: callers never see Stored set.
	Stored *ObjectRef `msgpack:"stored,omitempty"`
	// Record is set by the worker on a mission's result: the reference
	// of the mission's MissionRecord: Bucket StreamResults and Name its
	// RecordSubject (a message next to the result, not sealed), or, with
	// its key, the sealed object in BucketResults.
	Record *ObjectRef `msgpack:"record,omitempty"`
}

// Replayed counts the work a redelivered mission did not repeat: model
// replies and tool results it took from the journal an earlier attempt
// wrote.
type Replayed struct {
	ModelCalls int `msgpack:"model_calls"`
	ToolCalls  int `msgpack:"tool_calls"`
	// Unused is the usage of the model replies earlier attempts paid for
	// that the run did not use: it asked differently (a tool call whose
	// transport failed then answered, so the next request held its result)
	// or never reached them. Step.Usage includes it; the Step's trace does
	// not (see Step.TraceUsage).
	Unused *Usage `msgpack:"unused,omitempty"`
}

// Ok reports whether the run succeeded.
func (s *Step) Ok() bool { return s != nil && s.Fail == nil }

// Fail is the failure data of a Step: reason, message, op and details. Reason is a short snake_case string such as "parse_error",
// "timeout", "max_turns_exceeded" or the program's own reason given to
// (fail {...}).
type Fail struct {
	// Reason is a short snake_case machine-readable reason.
	Reason string `msgpack:"reason"`
	// Message is the human (and model) readable explanation.
	Message string `msgpack:"message"`
	// Op names the operation that failed (a tool name, "return", ...), if any.
	Op string `msgpack:"op,omitempty"`
	// Details carries structured extra data (an upstream failure, paths, ...).
	Details map[string]any `msgpack:"details,omitempty"`
}

// Error makes a Fail usable as an error text: "reason: message".
func (f *Fail) Error() string {
	if f == nil {
		return "<nil fail>"
	}
	if f.Message == "" {
		return f.Reason
	}
	return f.Reason + ": " + f.Message
}

// Usage is what a run consumed. The token counts and Requests cover the
// whole agent tree (the run's own LLM requests and those of its sub-agents
// and LLM tools); Turns and ToolCalls count the run's own turns and tool
// calls only (a sub-agent's are in its Step, ToolCall.Child).
type Usage struct {
	// InputTokens, OutputTokens, TotalTokens, CacheReadTokens and
	// CacheWriteTokens: summed over the agent tree.
	InputTokens      int64 `msgpack:"input_tokens"`
	OutputTokens     int64 `msgpack:"output_tokens"`
	TotalTokens      int64 `msgpack:"total_tokens"`
	CacheReadTokens  int64 `msgpack:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `msgpack:"cache_write_tokens,omitempty"`
	// CostUSD is the estimated cost in US dollars of the tokens of models
	// whose prices are configured, summed like the tokens (0: unknown).
	CostUSD float64 `msgpack:"cost_usd,omitempty"`
	// Requests is the number of LLM requests made by the agent tree.
	Requests int `msgpack:"requests"`
	// Turns is the number of the run's own turns.
	Turns int `msgpack:"turns"`
	// ToolCalls is the number of the run's own tool calls (a sub-agent
	// call counts once).
	ToolCalls   int           `msgpack:"tool_calls"`
	Duration    time.Duration `msgpack:"duration"`
	MemoryBytes int64         `msgpack:"memory_bytes,omitempty"`
}

// TraceUsage is the part of s.Usage the run itself consumed: s.Usage less
// the replies earlier attempts paid for and the run did not use
// (Replayed.Unused). It is what running the Step's trace again costs.
func (s *Step) TraceUsage() Usage {
	u := s.Usage
	if s.Replayed == nil || s.Replayed.Unused == nil {
		return u
	}
	o := s.Replayed.Unused
	u.InputTokens -= o.InputTokens
	u.OutputTokens -= o.OutputTokens
	u.TotalTokens -= o.TotalTokens
	u.CacheReadTokens -= o.CacheReadTokens
	u.CacheWriteTokens -= o.CacheWriteTokens
	u.CostUSD -= o.CostUSD
	u.Requests -= o.Requests
	return u
}

// Add adds o's counters to u (Duration and MemoryBytes are left alone: they
// describe a run as a whole, not a sum of its parts).
func (u *Usage) Add(o Usage) {
	u.AddTokens(o)
	u.Requests += o.Requests
	u.Turns += o.Turns
	u.ToolCalls += o.ToolCalls
}

// AddTokens adds o's tokens and cost to u, leaving the other counters
// alone (a parent counts a sub-agent's tokens, not its turns).
func (u *Usage) AddTokens(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.TotalTokens += o.TotalTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.CostUSD += o.CostUSD
}

// Turn is one entry of a Step's trace: one program the model wrote (or the
// one program of a scripted run) and what came of it.
type Turn struct {
	// Number counts turns from 1.
	Number int `msgpack:"turn"`
	// Program is the PTC-Lisp source that ran (empty in text mode).
	Program string `msgpack:"program,omitempty"`
	// Result is the value the program produced (nil on error).
	Result any `msgpack:"result"`
	// Error is the error text fed back to the model, if the turn failed.
	Error string `msgpack:"error,omitempty"`
	// Feedback is the message sent back to the model after this turn.
	Feedback string `msgpack:"feedback,omitempty"`
	// ToolCalls lists the tool calls the turn made, in order.
	ToolCalls []ToolCall `msgpack:"tool_calls,omitempty"`
	// Prints is the println output of the turn.
	Prints []string `msgpack:"prints,omitempty"`
	// Raw is the model's raw response.
	Raw string `msgpack:"raw,omitempty"`
	// StartedAt and Duration time the turn (LLM call, tools and program).
	StartedAt time.Time     `msgpack:"started_at"`
	Duration  time.Duration `msgpack:"duration"`
	// Usage is this turn's share of token use.
	Usage Usage `msgpack:"usage"`
	// Messages is the full prompt sent to the model (debug mode only).
	Messages []PromptMessage `msgpack:"messages,omitempty"`
	// Memory is a snapshot of memory after the turn (debug mode only).
	Memory map[string]any `msgpack:"memory,omitempty"`
}

// PromptMessage is one message of a model conversation as recorded in a
// debug trace.
type PromptMessage struct {
	Role    string `msgpack:"role"`
	Content string `msgpack:"content"`
}

// ToolCall records one tool call made during a turn.
type ToolCall struct {
	// ID is the provider's tool call id in text mode; empty otherwise.
	ID   string         `msgpack:"id,omitempty"`
	Name string         `msgpack:"name"`
	Args map[string]any `msgpack:"args,omitempty"`
	// Result is the tool's result (nil when it failed).
	Result any `msgpack:"result"`
	// Error is the error text when the call failed.
	Error     string        `msgpack:"error,omitempty"`
	StartedAt time.Time     `msgpack:"started_at"`
	Duration  time.Duration `msgpack:"duration"`
	// Child is the full Step of a sub-agent called as a tool.
	Child *Step `msgpack:"child,omitempty"`
	// Approval is the decision on a call that needed a person's approval
	// (docs/approvals.md): who decided, when, why, and the arguments they
	// gave in place of Args.
	Approval *Approval `msgpack:"approval,omitempty"`
}

// ErrInvalid is wrapped by every Validate error of this package.
var ErrInvalid = errors.New("invalid message")

// Validate checks the invariants a decoded Step must hold.
func (s *Step) Validate() error {
	if s == nil {
		return fmt.Errorf("%w: step is nil", ErrInvalid)
	}
	if s.Version < 0 || s.Version > StepVersion {
		return fmt.Errorf("%w: step version %d not supported (max %d)", ErrInvalid, s.Version, StepVersion)
	}
	if s.Fail != nil && s.Fail.Reason == "" {
		return fmt.Errorf("%w: step.fail.reason is empty", ErrInvalid)
	}
	switch s.Mode {
	case "", ModeLisp, ModeText:
	default:
		return fmt.Errorf("%w: step.mode %q is not %q or %q", ErrInvalid, s.Mode, ModeLisp, ModeText)
	}
	for i, t := range s.Trace {
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return fmt.Errorf("%w: step.trace[%d].tool_calls[%d].name is empty", ErrInvalid, i, j)
			}
			if c.Child != nil {
				if err := c.Child.Validate(); err != nil {
					return fmt.Errorf("step.trace[%d].tool_calls[%d].child: %w", i, j, err)
				}
			}
		}
	}
	return nil
}

// Output modes recorded in Step.Mode.
const (
	ModeLisp = "ptc_lisp"
	ModeText = "text"
)

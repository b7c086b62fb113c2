package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// DefaultReserveOutputTokens is the output a budget reserves for a call
// whose request sets no max_tokens (or max_completion_tokens) and whose
// model states no default (OutputLimiter): an answer may be longer, so a
// hard bound needs max_tokens in the agent's llm_opts.
const DefaultReserveOutputTokens = 4096

// promptBytesPerToken is how many bytes of prompt text a reservation
// counts as one token. Tokenizers in use (o200k_base, Claude's) average
// about four bytes of English or JSON per token; three leaves a margin
// and the settlement corrects it with the provider's count.
const promptBytesPerToken = 3

// PriceLister is a model that knows its prices (WithPrices); zero prices
// say that its calls cost nothing.
type PriceLister interface {
	Prices() Prices
}

// Wrapper is a model that wraps another: PricesOf and EstimateCall look
// through it.
type Wrapper interface {
	Unwrap() Model
}

// PricesOf returns the prices of m or of the first model it wraps that
// lists them; ok is false when none does.
func PricesOf(m Model) (p Prices, ok bool) {
	for m != nil {
		if pl, is := m.(PriceLister); is {
			return pl.Prices(), true
		}
		w, is := m.(Wrapper)
		if !is {
			break
		}
		m = w.Unwrap()
	}
	return Prices{}, false
}

// outputLimitOf returns the default max_tokens of m or of the first model
// it wraps that states one, else 0.
func outputLimitOf(m Model) int {
	for m != nil {
		if ol, is := m.(OutputLimiter); is {
			return ol.MaxOutputTokens()
		}
		w, is := m.(Wrapper)
		if !is {
			break
		}
		m = w.Unwrap()
	}
	return 0
}

// OutputLimiter is a model that states the max_tokens it sends when a
// request's Opts have none (anthropic.Client).
type OutputLimiter interface {
	MaxOutputTokens() int
}

// Estimate is what one model call may spend at most: its prompt's tokens
// (estimated from its size), its maximum output and their cost at the
// model's prices. Priced is false when the model has no prices
// (PricesOf).
type Estimate struct {
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
	Priced       bool
}

// Tokens returns InputTokens + OutputTokens.
func (e Estimate) Tokens() int64 { return e.InputTokens + e.OutputTokens }

// EstimateCall estimates what req sent to m may spend at most: one token
// per three bytes of the system prompt, messages and tool definitions,
// plus the request's max_tokens (or max_completion_tokens), else m's
// default (OutputLimiter), else DefaultReserveOutputTokens; priced with
// m's prices, prompt tokens at the uncached input price.
func EstimateCall(m Model, req Request) Estimate {
	size := len(req.System)
	for _, msg := range req.Messages {
		size += 8 // the message's framing
		for _, b := range msg.Content {
			switch b := b.(type) {
			case Text:
				size += len(b.Text)
			case ToolUse:
				size += len(b.Name) + jsonSize(b.Input)
			case ToolResult:
				size += len(b.Content)
			}
		}
	}
	for _, t := range req.Tools {
		size += len(t.Name) + len(t.Description) + jsonSize(t.InputSchema)
	}
	e := Estimate{InputTokens: int64(size+promptBytesPerToken-1) / promptBytesPerToken, OutputTokens: maxOutput(m, req)}
	if p, ok := PricesOf(m); ok {
		e.Priced = true
		e.CostUSD = p.Cost(Usage{InputTokens: e.InputTokens, OutputTokens: e.OutputTokens})
	}
	return e
}

// jsonSize is the size of v's JSON form (0 when it has none).
func jsonSize(v map[string]any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

func maxOutput(m Model, req Request) int64 {
	for _, k := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		switch v := req.Opts[k].(type) {
		case int:
			return int64(v)
		case int64:
			return v
		case float64:
			return int64(v)
		}
	}
	if n := outputLimitOf(m); n > 0 {
		return int64(n)
	}
	return DefaultReserveOutputTokens
}

// A Budget holds what model calls may spend. WithBudget reserves each
// call's Estimate before the call and settles it with the call's actual
// usage after.
type Budget interface {
	// Reserve holds e against the budget, or returns an error (a
	// *BudgetError when the budget does not have e left).
	Reserve(ctx context.Context, model string, e Estimate) (Reservation, error)
}

// A Reservation is settled once, with the usage the call reported (zero
// when the call failed without an answer).
type Reservation interface {
	Settle(ctx context.Context, used Usage)
}

// ErrBudgetExceeded matches every *BudgetError.
var ErrBudgetExceeded = errors.New("budget exceeded")

// BudgetError says which budget refused a model call and why. It is not
// retryable: the run ends with reason budget_exceeded.
type BudgetError struct {
	// Budget names the budget ("the mission's max_cost_usd",
	// "submitter alice's day budget").
	Budget string
	// Msg says what did not fit.
	Msg string
}

func (e *BudgetError) Error() string { return e.Budget + ": " + e.Msg }

// Is matches ErrBudgetExceeded.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExceeded }

// WithBudget returns m with each call reserved against b before it is
// made and settled after; a call b refuses is not made and returns b's
// error. name is the model's name passed to b.
func WithBudget(m Model, name string, b Budget) Model {
	return budgetModel{m: m, name: name, b: b}
}

type budgetModel struct {
	m    Model
	name string
	b    Budget
}

func (bm budgetModel) Complete(ctx context.Context, req Request) (*Response, error) {
	r, err := bm.b.Reserve(ctx, bm.name, EstimateCall(bm.m, req))
	if err != nil {
		return nil, err
	}
	resp, err := bm.m.Complete(ctx, req)
	var used Usage
	if resp != nil {
		used = resp.Usage
	}
	r.Settle(context.WithoutCancel(ctx), used)
	return resp, err
}

// CompleteAsync is Complete without holding the caller while the answer
// is awaited (AsyncModel): the call is reserved before it starts and
// settled when its answer comes.
func (bm budgetModel) CompleteAsync(ctx context.Context, req Request, done func(*Response, error)) {
	r, err := bm.b.Reserve(ctx, bm.name, EstimateCall(bm.m, req))
	if err != nil {
		done(nil, err)
		return
	}
	CompleteAsync(ctx, bm.m, req, func(resp *Response, err error) {
		var used Usage
		if resp != nil {
			used = resp.Usage
		}
		r.Settle(context.WithoutCancel(ctx), used)
		done(resp, err)
	})
}

// Unwrap returns the model the budget wraps.
func (bm budgetModel) Unwrap() Model { return bm.m }

// Limit is a Budget of at most MaxCostUSD dollars and MaxTokens tokens
// (0: no bound of that kind), held in memory: one run's, shared by its
// sub-agents and retries. A call is refused when what is spent, what is
// reserved by calls in flight and its own estimate would pass a bound,
// and when a cost bound is set and the model has no prices. It is safe
// for concurrent use.
type Limit struct {
	name       string
	maxCostUSD float64
	maxTokens  int64

	mu             sync.Mutex
	spent          Usage
	reservedCost   float64
	reservedTokens int64
}

// NewLimit returns a Limit named name (used in its errors, e.g. "the
// mission's budget").
func NewLimit(name string, maxCostUSD float64, maxTokens int64) *Limit {
	return &Limit{name: name, maxCostUSD: maxCostUSD, maxTokens: maxTokens}
}

// Spent returns the usage settled so far.
func (l *Limit) Spent() Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spent
}

// Reserve implements Budget.
func (l *Limit) Reserve(_ context.Context, model string, e Estimate) (Reservation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxCostUSD > 0 {
		if !e.Priced {
			return nil, &BudgetError{Budget: l.name, Msg: fmt.Sprintf("max_cost_usd %g cannot be checked: model %q has no prices (price_in, price_out)", l.maxCostUSD, model)}
		}
		if have := l.spent.CostUSD + l.reservedCost; have+e.CostUSD > l.maxCostUSD {
			return nil, &BudgetError{Budget: l.name, Msg: fmt.Sprintf("max_cost_usd %g reached: $%.6f spent or reserved, the next model call may cost $%.6f", l.maxCostUSD, have, e.CostUSD)}
		}
	}
	if l.maxTokens > 0 {
		if have := l.spent.Total() + l.reservedTokens; have+e.Tokens() > l.maxTokens {
			return nil, &BudgetError{Budget: l.name, Msg: fmt.Sprintf("max_tokens %d reached: %d spent or reserved, the next model call may take %d", l.maxTokens, have, e.Tokens())}
		}
	}
	l.reservedCost += e.CostUSD
	l.reservedTokens += e.Tokens()
	return &limitReservation{l: l, e: e}, nil
}

type limitReservation struct {
	l    *Limit
	e    Estimate
	once sync.Once
}

func (r *limitReservation) Settle(_ context.Context, used Usage) {
	r.once.Do(func() {
		r.l.mu.Lock()
		defer r.l.mu.Unlock()
		r.l.reservedCost -= r.e.CostUSD
		r.l.reservedTokens -= r.e.Tokens()
		r.l.spent.Add(used)
	})
}

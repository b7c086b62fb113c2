package agent

import (
	"context"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// RunAsync runs the agent as Run does and calls done once with what Run
// would return. A run holds no goroutine of its own while it
// waits on its model: each of its model calls runs on a new goroutine,
// whose stack holds little more than the model client's frames, and the
// goroutine that started the call returns (RunAsync returns once the
// first call is under way). When the reply comes, the run goes on, on
// the model call's goroutine, to its next model call or to its end, where
// done is called. A run that ends before its first model call calls done
// before RunAsync returns. The run's events, its Step and its failures (a panic fails
// it, as in Run) are Run's. A fleet worker runs its missions so (pkg/fleet
// AsyncRunner): thousands of missions waiting on a slow model then hold
// the model calls' goroutines, not their whole runs'.
func (a *Agent) RunAsync(ctx context.Context, opts RunOptions, done func(*messages.Step, error)) {
	r := &asyncRun{a: a, done: done}
	r.rs = a.newRun(&opts, nil)
	if lisp.MeterFrom(ctx) == nil {
		// what the mission holds from its tools, as in run
		ctx = lisp.WithMeter(ctx, a.missionMeter())
	}
	r.ctx = ctx
	// the options set the run up (begin) and are not kept: a run waiting
	// on its model holds what its tree, run state and turns took of them
	r.stretch(func() (*messages.Step, error, bool) { return r.begin(&opts) })
}

// asyncRun is a run of RunAsync: what run and loop keep in
// their frames, on the heap, between the stretches of the run that go from
// one model call to the next.
type asyncRun struct {
	a          *Agent
	done       func(*messages.Step, error)
	ctx        context.Context
	missionCtx context.Context
	cancel     context.CancelFunc
	rs         *runState
	l          turns
}

// begin sets the run up with opts as run does, and starts its first
// turn.
func (r *asyncRun) begin(opts *RunOptions) (*messages.Step, error, bool) {
	a, rs := r.a, r.rs
	in, fail := resolveInput(*opts)
	rs.emitRunStart(r.ctx, in)
	missionCtx, cancel, step, err := a.begin(r.ctx, rs, in, fail, opts, nil)
	if missionCtx == nil {
		return step, err, true
	}
	r.missionCtx, r.cancel = missionCtx, cancel
	l, step, err := a.newTurns(r.ctx, missionCtx, rs, in, opts, rs.st)
	if l == nil {
		return step, err, true
	}
	r.l = l
	return r.turn(1)
}

// turn starts turn n: it builds the turn's request and starts its model
// call on a goroutine of its own (call); over when the run ends first.
func (r *asyncRun) turn(n int) (*messages.Step, error, bool) {
	l := r.l
	if n > l.last() {
		step, err := l.outOfTurns()
		return step, err, true
	}
	if step, err, done := l.request(n); done {
		return step, err, true
	}
	go r.call(n)
	return nil, nil, false
}

// call makes turn n's model call, then plays the answer and goes on with
// the run. A model that starts its calls without waiting on them
// (llm.AsyncModel) answers on a goroutine of its own, where the run goes
// on, and this goroutine ends once the call is under way; with any other
// model the run goes on here.
func (r *asyncRun) call(n int) {
	r.stretch(func() (*messages.Step, error, bool) {
		req, policy := r.l.model()
		r.a.startModelCall(r.missionCtx, r.rs, policy, req, func(resp *llm.Response, requests int, lerr error) {
			r.stretch(func() (*messages.Step, error, bool) { return r.answer(n, resp, requests, lerr) })
		})
		return nil, nil, false
	})
}

// answer plays turn n's answer, the model's resp or lerr after requests
// requests, and starts the next turn; over when the run ends.
func (r *asyncRun) answer(n int, resp *llm.Response, requests int, lerr error) (*messages.Step, error, bool) {
	r.rs.st.Usage.Requests += requests
	if step, err, done := r.l.answer(n, resp, requests, lerr); done {
		return step, err, true
	}
	return r.turn(n + 1)
}

// stretch runs f, a stretch of the run on this goroutine; when f ends the
// run, or panics, the run ends here as run's deferred calls end it.
func (r *asyncRun) stretch(f func() (*messages.Step, error, bool)) {
	var step *messages.Step
	var err error
	over := true
	defer r.end(&step, &err, &over)
	step, err, over = f()
}

// end ends the run once over, or on a panic: the turns' state (loop's
// l.end), the mission context, the run's end (runState.end) and its
// duration, in run's order; then done hears the run's Step.
func (r *asyncRun) end(step **messages.Step, err *error, over *bool) {
	p := recover()
	if p == nil && !*over {
		return
	}
	if r.l != nil {
		r.l.end()
	}
	if r.cancel != nil {
		r.cancel()
	}
	r.rs.ended(r.ctx, p, step, err)
	r.rs.stamp()
	r.done(*step, *err)
}

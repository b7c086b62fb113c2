package llm

import "context"

// An AsyncModel is a Model that can start a call without holding its
// caller while the answer is awaited. CompleteAsync makes the call
// Complete would make and calls done once with what Complete would
// return. The wait happens on a goroutine of the model's own, whose
// stack holds only what the wait needs, and done runs there once the
// answer comes; a call that ends before it waits (a bad request, a
// refused budget, a reply from a journal) may call done before
// CompleteAsync returns. The goroutine that started the call returns, so a
// caller that has nothing else to do can let its goroutine end, and
// thousands of calls awaiting a slow model hold one small stack each.
//
// Wrappers of a model (budgets, prices, journals) implement it by
// starting their inner model with [CompleteAsync] and doing in done what
// Complete does after the call.
type AsyncModel interface {
	Model
	CompleteAsync(ctx context.Context, req Request, done func(*Response, error))
}

// CompleteAsync starts a call of m: through m's CompleteAsync when m is an
// AsyncModel, otherwise by calling m.Complete on this goroutine and then
// done.
func CompleteAsync(ctx context.Context, m Model, req Request, done func(*Response, error)) {
	if am, ok := m.(AsyncModel); ok {
		am.CompleteAsync(ctx, req, done)
		return
	}
	done(m.Complete(ctx, req))
}

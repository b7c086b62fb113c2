package core

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// Running a program: the top level (RunTop) and the parallel branches of
// pmap and pcalls (RunBranches).

// RunTop evaluates the compiled program, recovering errors and signals,
// then realises lazy seqs in the result under the same limits.
func (th *Thread) RunTop(body Node, nslots int) (v Value, sig *ReturnSignal, err *Error) {
	fr := th.frameAt(0)
	fr.Slots = th.Alloca(nslots)
	v, sig, err = th.Protect(func() Value { return body(fr) })
	if err != nil {
		return v, sig, err
	}
	target := v
	if sig != nil {
		target = sig.Val
	}
	switch target.(type) {
	case nil, bool, int64, float64, string, *Keyword:
		return v, sig, nil // nothing to realise
	}
	if _, _, rerr := th.Protect(func() Value { th.RealiseDeep(target); return nil }); rerr != nil {
		return nil, nil, rerr
	}
	return v, sig, nil
}

// RunBranches runs n branches concurrently in child threads and returns
// their values in order; the first error fails the whole form.
func (th *Thread) RunBranches(name string, n int, branch func(child *Thread, i int) Value) []Value {
	out := make([]Value, n)
	if n == 0 {
		return out
	}
	th.branched = true
	ctx, cancel := context.WithCancel(th.DeadlineCtx())
	defer cancel()
	sem := make(chan struct{}, maxParallel())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr *Error
	var firstIdx = -1
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			bctx, bcancel := context.WithTimeout(ctx, branchTimeout)
			defer bcancel()
			child := th.fork(bctx)
			err := child.safeBranch(func() { out[i] = branch(child, i) })
			if child.ToolCancel != nil {
				child.ToolCancel()
			}
			if err != nil {
				mu.Lock()
				canceled := err.Kind == KindCanceled
				if firstErr == nil || (firstErr.Kind == KindCanceled && !canceled) || (i < firstIdx && !canceled) {
					firstErr, firstIdx = err, i
				}
				mu.Unlock()
				cancel()
			}
		}(i)
	}
	wg.Wait()
	// merge counters so limits stay global
	if firstErr != nil {
		if name == "pcalls" && firstErr.Kind != KindTimeout && firstErr.Kind != KindCanceled {
			firstErr.Msg = fmt.Sprintf("pcalls: thunk %d failed: %s", firstIdx, firstErr.Msg)
		}
		panic(firstErr)
	}
	if err := th.Ctx.Err(); err != nil {
		th.RaiseCtx(err)
	}
	return out
}

func (th *Thread) safeBranch(fn func()) (err *Error) {
	defer func() {
		if p := recover(); p != nil {
			if s, ok := p.(*ReturnSignal); ok {
				what := "fail"
				if s.Ret {
					what = "return"
				}
				err = &Error{Kind: KindAnalysis, Pos: s.Pos, Msg: what + " is not allowed inside pmap or pcalls"}
				return
			}
			err = th.RecoverValue(p)
			if err.Kind == KindCanceled && err.Err == context.DeadlineExceeded {
				err.Kind = KindTimeout
			}
		}
	}()
	fn()
	return nil
}

const branchTimeout = 5 * time.Second

// maxParallel bounds pmap/pcalls branches.
func maxParallel() int { return 2 * runtime.NumCPU() }

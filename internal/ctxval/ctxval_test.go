package ctxval_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ptcfleet/ptc/internal/ctxval"
)

type key struct{}

type otherKey struct{}

type pos struct{ line, col int }

func TestCtxAnswersItsKeyAndAsksTheParent(t *testing.T) {
	parent := context.WithValue(context.Background(), otherKey{}, "from the parent")
	c := &ctxval.Ctx[key, pos]{Context: parent, V: pos{3, 7}}
	got, ok := c.Value(key{}).(*pos)
	if !ok || got != &c.V || *got != (pos{3, 7}) {
		t.Fatalf("Value(key{}) = %#v, want a pointer to the held value", c.Value(key{}))
	}
	if v := c.Value(otherKey{}); v != "from the parent" {
		t.Fatalf("Value(otherKey{}) = %#v, want the parent's value", v)
	}
	if v := c.Value("key"); v != nil {
		t.Fatalf("Value of an unknown key = %#v, want nil", v)
	}
	// a cancellation of the parent reaches the child as with any context
	cctx, cancel := context.WithCancel(parent)
	c = &ctxval.Ctx[key, pos]{Context: cctx}
	cancel()
	<-c.Done()
	if c.Err() != context.Canceled {
		t.Fatalf("Err = %v after the parent's cancel", c.Err())
	}
}

func TestCtxValueDoesNotAllocate(t *testing.T) {
	c := &ctxval.Ctx[key, pos]{Context: context.Background(), V: pos{1, 2}}
	if n := testing.AllocsPerRun(100, func() { _ = c.Value(key{}) }); n != 0 {
		t.Fatalf("Value allocates %v times, want 0", n)
	}
}

func ExampleCtx() {
	type meterKey struct{}
	type meter struct{ used int64 }
	c := &ctxval.Ctx[meterKey, meter]{Context: context.Background()}
	var ctx context.Context = c
	ctx.Value(meterKey{}).(*meter).used += 10
	fmt.Println(c.V.used)
	// Output: 10
}

package lisp

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// A host builtin calls the function its host gives with plain Go
// arguments and returns its result; without one, or when it fails, the
// call is an error naming the builtin.
func TestHostBuiltins(t *testing.T) {
	var got [][]any
	host := core.HostFuncs{"step-done": func(_ context.Context, args []any) (any, error) {
		got = append(got, args)
		return map[string]any{"done": int64(len(got))}, nil
	}, "emit": func(context.Context, []any) (any, error) {
		return nil, errors.New("too large")
	}}
	res, err := Exec(context.Background(), `(step-done "1" (str "fetched " (count [1 2 3])))`, Options{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]any{{"1", "fetched 3"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("host got %v, want %v", got, want)
	}
	if v := core.ToGo(res.Value); !reflect.DeepEqual(v, map[string]any{"done": int64(1)}) {
		t.Fatalf("value %v", v)
	}

	_, err = Exec(context.Background(), `(emit {:a 1})`, Options{Host: host})
	var le *core.Error
	if !errors.As(err, &le) || le.Kind != core.KindTool || le.Op != "emit" || !strings.Contains(le.Msg, "emit failed: too large") {
		t.Fatalf("err = %v", err)
	}
	_, err = Exec(context.Background(), `(llm-query {:prompt "hi" :signature ":string"})`, Options{Host: host})
	if !errors.As(err, &le) || le.Kind != core.KindUnknownTool || !strings.Contains(le.Msg, "llm-query is not available") {
		t.Fatalf("err = %v", err)
	}
	hb := builtins.HostBuiltins()
	for _, name := range []string{"llm-query", "emit", "step-done"} {
		if !strings.HasPrefix(hb[name].Usage, "("+name+" ") || hb[name].Doc == "" {
			t.Errorf("%s: %+v", name, hb[name])
		}
	}
	if len(hb) != 3 {
		t.Errorf("host builtins %v", hb)
	}
}

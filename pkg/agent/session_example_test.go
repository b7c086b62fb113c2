package agent_test

import (
	"context"
	"fmt"

	"github.com/ptcfleet/ptc/pkg/agent"
)

// A Session runs programs typed by a person against an agent's tools and
// context; each outcome reads as the model's feedback would (here the
// firewalled _secret field is masked), memory persists and *1 holds the
// last value.
func ExampleSession() {
	users := agent.FuncSig("() -> [{name :string, _secret :string}]",
		func(context.Context, map[string]any) (any, error) {
			return []any{map[string]any{"name": "ada", "_secret": "s3cr3t"}}, nil
		})
	a, err := agent.New(agent.Spec{Prompt: "explore", Tools: map[string]agent.Tool{"users": users}})
	if err != nil {
		panic(err)
	}
	s, err := a.NewSession(agent.RunOptions{Context: map[string]any{"n": 2}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	fmt.Println(s.Eval(ctx, `(def us (tool/users {}))`).Shown)
	fmt.Println(s.Eval(ctx, `(first us)`).Shown)
	fmt.Println(s.Eval(ctx, `(* ctx/n (count us))`).Shown)
	ev := s.Eval(ctx, `(inc *1)`)
	fmt.Println(ev.Shown)
	fmt.Println("full value:", ev.Value)
	fmt.Println(s.Eval(ctx, `(nth us "x")`).Shown)
	// Output:
	// Result: #'us
	// Memory: us
	// Result: {"_secret" <Firewalled> "name" "ada"}
	// Memory: _secret, name, us
	// The result map was merged into memory key by key (_secret, name). To keep a map whole, end with {:name the-map} or (def name the-map).
	// Result: 2
	// Memory: _secret, name, us
	// Result: 3
	// Memory: _secret, name, us
	// full value: 3
	// Error: 1:1: nth: expected integer, got string "x" (arg 2)
	//   (nth us "x")
	//   ^
}

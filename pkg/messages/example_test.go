package messages_test

import (
	"fmt"

	"github.com/ptcfleet/ptc/pkg/messages"
)

func ExampleMarshalStep() {
	step := &messages.Step{
		Return:    map[string]any{"count": int64(2), "avg": 2.0},
		Signature: "{count :int, avg :float}",
	}
	data, err := messages.MarshalStep(step)
	if err != nil {
		panic(err)
	}
	back, err := messages.UnmarshalStep(data)
	if err != nil {
		panic(err)
	}
	m := back.Return.(map[string]any)
	fmt.Printf("%T %v, %T %v, ok=%v\n", m["count"], m["count"], m["avg"], m["avg"], back.Ok())
	// Output: int64 2, float64 2, ok=true
}

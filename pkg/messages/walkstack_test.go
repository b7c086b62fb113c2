package messages

import (
	"runtime"
	"sync"
	"testing"
)

// stackPerGoroutine is the stack each of n new goroutines holds once it
// ran f and waits: what f grew it to.
func stackPerGoroutine(t *testing.T, n int, f func()) uint64 {
	t.Helper()
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			f()
			ready.Done()
			<-release
		}()
	}
	ready.Wait()
	runtime.ReadMemStats(&after)
	close(release)
	done.Wait()
	return (after.StackInuse - before.StackInuse) / uint64(n)
}

// Decoding a Step with a trace, or a mission, on a new goroutine grows
// its stack to 8 and 4 KB: each level of the walk after the decode (a
// pointer, a struct, a slice, a nested map) is a small frame, where one
// frame of about 0.9 KB a level grew them to 16 and 8 KB, one more copy
// of the stack each time a worker's or a tool service's goroutine, or a
// client's, decodes one.
func TestUnmarshalGrowsTheStackLittle(t *testing.T) {
	if raceBuild {
		t.Skip("the race detector enlarges every frame")
	}
	if s := stackPerGoroutine(t, 100, func() {}); s >= 4<<10 {
		t.Skipf("a new goroutine's stack starts at %d bytes", s)
	}
	step := &Step{Version: StepVersion, Return: map[string]any{"n": map[string]any{"m": []any{map[string]any{"x": int64(1)}}}},
		Trace: []Turn{{Number: 1, Program: "(return 1)", Result: map[string]any{"n": int64(2)},
			ToolCalls: []ToolCall{{Name: "get", Args: map[string]any{"id": map[string]any{"a": []any{int64(1)}}}, Result: map[string]any{"n": int64(1)}}}}}}
	data, err := MarshalStep(step)
	if err != nil {
		t.Fatal(err)
	}
	if s := stackPerGoroutine(t, 200, func() {
		if _, err := UnmarshalStep(data); err != nil {
			t.Error(err)
		}
	}); s > 12<<10 {
		t.Errorf("decoding a step grows a goroutine's stack to %d bytes, want at most 8 KB", s)
	}
	m, err := Marshal(&Mission{Version: MissionVersion, ID: "01JB0000000000000000000000", Kind: KindAgent,
		Agent: &AgentSpec{Prompt: "p", Tools: []string{"a"}}, Context: map[string]any{"amount": int64(5)}})
	if err != nil {
		t.Fatal(err)
	}
	if s := stackPerGoroutine(t, 200, func() {
		var got Mission
		if err := Unmarshal(m, &got); err != nil {
			t.Error(err)
		}
	}); s > 6<<10 {
		t.Errorf("decoding a mission grows a goroutine's stack to %d bytes, want at most 4 KB", s)
	}
}

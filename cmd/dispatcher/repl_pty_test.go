package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/syncbuf"
)

// waitFor waits until the screen s, from offset from on, holds want, and
// returns the offset just past it.
func waitFor(t *testing.T, s *syncbuf.Buffer, from int, want string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got := s.String()
		if i := strings.Index(got[from:], want); i >= 0 {
			return from + i + len(want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the terminal never showed %q; it shows:\n%s", want, s.String()[from:])
	return 0
}

// TestREPLInteractiveOnATerminal drives the REPL through a pseudo-terminal:
// line editing input, multi-line entries, history, Ctrl-C cancelling a
// running program and clearing a half-typed entry, and Ctrl-D leaving.
func TestREPLInteractiveOnATerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 200}); err != nil {
		t.Fatal(err)
	}
	screen := &syncbuf.Buffer{} // what the REPL writes to the terminal
	go func() { _, _ = io.Copy(screen, ptmx) }()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runREPL(ctx, replConfig{stdin: tty}, testEnv(nil), zerolog.Nop(), tty, tty)
	}()
	key := func(s string) {
		t.Helper()
		if _, err := ptmx.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}

	at := waitFor(t, screen, 0, "Ctrl-D leaves")
	at = waitFor(t, screen, at, "ptc> ")
	// Each step types keys, waits settle, then waits until the screen
	// shows want after what the steps before it showed.
	for _, step := range []struct {
		keys, want string
		settle     time.Duration
	}{
		{keys: "(def x 41)\r", want: "Result: #'x"},
		// an entry spans lines until its brackets close
		{keys: "(+ x\r", want: "...   "},
		{keys: "1)\r", want: "Result: 42"},
		// line editing: type, move left over a character, insert one
		{keys: "(+ 1 3)\x1b[D\x1b[D2\r", want: "Result: 24"}, // (+ 1 23)
		// Ctrl-C cancels the running program, not the REPL
		{keys: "(loop [i 0] (recur (inc i)))\r", settle: 500 * time.Millisecond}, // let the program start
		{keys: "\x03", want: "execution canceled"},
		{keys: "(+ 1 2)\r", want: "Result: 3"},
		// Ctrl-C at the prompt drops the entry being typed
		{keys: "(+ 100\r", want: "...   "},
		{keys: "\x03", want: "^C"},
		{keys: "(* 2 2)\r", want: "Result: 4"},
		// history: arrow up brings back the last entry
		{keys: "\x1b[A\r", want: "Result: 4"},
		// memory survived all of it
		{keys: "x\r", want: "Result: 41"},
	} {
		key(step.keys)
		time.Sleep(step.settle)
		at = waitFor(t, screen, at, step.want)
	}

	// Ctrl-D on an empty line leaves
	key("\x04")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("repl: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Ctrl-D did not leave the REPL; the terminal shows:\n%s", screen.String())
	}
}

package fleet

import (
	"errors"
	"testing"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A result is read without its headers: the Step as stored, a mission
// without one not found, and far fewer allocations in the process (the
// server's work included) than the read with the headers.
func TestResultReadWithoutHeaders(t *testing.T) {
	ctx, js, st := testStores(t)
	k := missionKey{sub: "s", id: messages.NewMissionID()}
	if _, mine, err := publishResult(ctx, js, st, k, &messages.Step{Return: map[string]any{"n": int64(7)}}, claimFence{}); err != nil || !mine {
		t.Fatalf("result: mine %v, %v", mine, err)
	}
	got, err := readResult(ctx, st, k)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := got.Return.(map[string]any); !ok || r["n"] != int64(7) {
		t.Fatalf("result %+v, want n 7", got.Return)
	}
	if _, err := readResult(ctx, st, missionKey{sub: "s", id: messages.NewMissionID()}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("result of a mission without one: %v, want ErrNotFound", err)
	}
	bare := func() {
		if _, err := readResult(ctx, st, k); err != nil {
			t.Fatal(err)
		}
	}
	withHeaders := func() {
		data, _, _, err := directLast(ctx, st.nc, nil, messages.StreamResults, messages.ResultSubject(k.sub, k.id))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := storedStep(ctx, st, k.id, data); err != nil {
			t.Fatal(err)
		}
	}
	n, h := fewestAllocs(bare, withHeaders)
	t.Logf("%.0f allocations a result read, %.0f with the result's headers", n, h)
	if raceOn {
		t.Skip("allocation counts under -race")
	}
	if n > resultReadAllocs {
		t.Errorf("%.0f allocations a result read (%.0f with its headers), want at most %d", n, h, resultReadAllocs)
	}
}

// resultReadAllocs bounds TestResultReadWithoutHeaders.
const resultReadAllocs = 36

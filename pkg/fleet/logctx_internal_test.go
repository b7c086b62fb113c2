package fleet

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestLogWithBuildsNothingForALoggerThatWritesNothing(t *testing.T) {
	add := func(c zerolog.Context) zerolog.Context {
		return c.Str("mission_id", "m1").Int("attempt", 2)
	}
	nop := zerolog.Nop()
	if n := testing.AllocsPerRun(100, func() { _ = logWith(nop, add) }); n != 0 {
		t.Fatalf("a disabled logger's mission context costs %.0f allocations, want 0", n)
	}
	var buf bytes.Buffer
	l := logWith(zerolog.New(&buf), add)
	l.Info().Msg("mission finished")
	if got := buf.String(); !strings.Contains(got, `"mission_id":"m1"`) || !strings.Contains(got, `"attempt":2`) {
		t.Fatalf("an enabled logger's line lacks the mission's fields: %s", got)
	}
}

// A mission's logger writes its fields on every line, a sub-logger's too,
// and holds a few dozen bytes for them rather than a context buffer of
// 500 (its whole cost while the mission waits on a model).
func TestMissionLoggerHoldsItsFieldsSmall(t *testing.T) {
	var buf bytes.Buffer
	base := zerolog.New(&buf).With().Str("worker", "w1").Logger()
	l := missionLogger(base, "m1", "acme", 2)
	l.Info().Str("state", "succeeded").Msg("mission finished")
	sub := l.With().Str("tool", "probe").Logger()
	sub.Warn().Msg("slow")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`{"level":"info","worker":"w1","state":"succeeded","mission_id":"m1","submitter":"acme","attempt":2,"message":"mission finished"}`,
		`{"level":"warn","worker":"w1","tool":"probe","mission_id":"m1","submitter":"acme","attempt":2,"message":"slow"}`,
	}
	if len(lines) != 2 || lines[0] != want[0] || lines[1] != want[1] {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if n := testing.AllocsPerRun(100, func() { _ = missionLogger(zerolog.Nop(), "m1", "acme", 2) }); n != 0 {
		t.Errorf("a disabled logger's mission logger costs %.0f allocations, want 0", n)
	}
	var before, after runtime.MemStats
	const n = 1000
	kept := make([]zerolog.Logger, n)
	runtime.ReadMemStats(&before)
	for i := range kept {
		kept[i] = missionLogger(base, "m1", "acme", 2)
	}
	runtime.ReadMemStats(&after)
	// what building it allocates is what it holds: 64 bytes measured (the
	// hook and the logger's list of hooks), 512 with the fields in the
	// logger's context
	if per := float64(after.TotalAlloc-before.TotalAlloc) / n; per > 128 {
		t.Errorf("a mission's logger holds %.0f bytes, want at most 128", per)
	}
	runtime.KeepAlive(kept)
}

// A mission holds its logger once: the worker's missionRun points to the
// copy its run's contexts carry (zerolog.Ctx), which writes the mission's
// fields; a worker that logs nothing attaches no logger and hands out its
// own, allocating nothing.
func TestMissionLogIsTheOneItsContextsCarry(t *testing.T) {
	var buf bytes.Buffer
	w := &Worker{log: zerolog.New(&buf), runCtx: context.Background()}
	ctx, l := w.missionLog("m1", "acme", 2)
	if zerolog.Ctx(ctx) != l {
		t.Fatal("the mission's logger is not the one its context carries")
	}
	zerolog.Ctx(ctx).Info().Msg("from the context")
	if got := buf.String(); !strings.Contains(got, `"mission_id":"m1","submitter":"acme","attempt":2`) {
		t.Fatalf("a line logged through the run's context lacks the mission's fields: %s", got)
	}
	nop := &Worker{log: zerolog.Nop(), runCtx: context.Background()}
	if ctx, l := nop.missionLog("m1", "acme", 2); ctx != nop.runCtx || l != &nop.log {
		t.Error("a worker that logs nothing attached a logger to the run's context")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = nop.missionLog("m1", "acme", 2) }); n != 0 {
		t.Errorf("a worker that logs nothing: %.0f allocations for a mission's logger, want 0", n)
	}
}

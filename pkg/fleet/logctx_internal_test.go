package fleet

import (
	"bytes"
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

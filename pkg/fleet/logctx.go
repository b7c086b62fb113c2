package fleet

import (
	"context"

	"github.com/rs/zerolog"
)

// logWith returns l with the fields add puts in its context, or l itself
// when l writes nothing (the default, zerolog.Nop): a logger's context is
// a buffer, copied and written with its fields whenever one is made, for
// every mission and tool call, whether anything is logged or not.
func logWith(l zerolog.Logger, add func(zerolog.Context) zerolog.Context) zerolog.Logger {
	if l.GetLevel() == zerolog.Disabled {
		return l
	}
	return add(l.With()).Logger()
}

// missionLogger returns l writing the mission's id, submitter and attempt
// on every line, or l itself when l writes nothing. The fields are written
// by a hook, after the line's own fields: a logger's context would copy
// them into a buffer of its own (500 bytes, whatever the fields' size),
// held as long as the mission runs, also while it waits on a model.
func missionLogger(l zerolog.Logger, id, sub string, attempt int) zerolog.Logger {
	if l.GetLevel() == zerolog.Disabled {
		return l
	}
	return l.Hook(&missionFields{id: id, sub: sub, attempt: attempt})
}

// missionLog returns the worker's run context carrying the logger of a
// mission (missionLogger; zerolog.Ctx), and the copy of it the context
// carries, so that the mission holds its logger once. A worker that logs
// nothing attaches none and hands out its own.
func (w *Worker) missionLog(id, sub string, attempt int) (context.Context, *zerolog.Logger) {
	if w.log.GetLevel() == zerolog.Disabled {
		return w.runCtx, &w.log
	}
	ctx := missionLogger(w.log, id, sub, attempt).WithContext(w.runCtx)
	return ctx, zerolog.Ctx(ctx)
}

// missionFields writes a mission's fields on a line of its logger.
type missionFields struct {
	id, sub string
	attempt int
}

// Run writes the fields on e.
func (f *missionFields) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str("mission_id", f.id).Str("submitter", f.sub).Int("attempt", f.attempt)
}

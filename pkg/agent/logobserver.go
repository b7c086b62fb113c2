package agent

import (
	"context"

	"github.com/rs/zerolog"
)

// LogObserver returns an Observer that logs every event to l: run, turn
// and LLM events at debug level, tool events at debug level (tool
// exceptions and failed runs at warn). It logs names, counts, durations
// and errors, never argument, result or prompt values (they may be large
// or firewalled). The logger is used as given (add mission ids with
// l.With() before passing it in).
func LogObserver(l zerolog.Logger) Observer {
	return ObserverFunc(func(_ context.Context, e Event) {
		lvl := zerolog.DebugLevel
		if e.Kind == EventToolException || e.Kind == EventRunException || (e.Kind == EventRunStop && e.Status == "error") {
			lvl = zerolog.WarnLevel
		}
		ev := l.WithLevel(lvl).Str("event", string(e.Kind)).Str("agent", e.Agent).Int("depth", e.Depth)
		if e.Turn > 0 {
			ev = ev.Int("turn", e.Turn)
		}
		if e.Tool != "" {
			ev = ev.Str("tool", e.Tool)
		}
		if e.Duration > 0 {
			ev = ev.Dur("duration", e.Duration)
		}
		if e.Usage.InputTokens > 0 || e.Usage.OutputTokens > 0 {
			ev = ev.Int64("input_tokens", e.Usage.InputTokens).Int64("output_tokens", e.Usage.OutputTokens)
		}
		if e.Status != "" {
			ev = ev.Str("status", e.Status)
		}
		if e.Step != nil && e.Step.Fail != nil {
			ev = ev.Str("reason", e.Step.Fail.Reason)
		}
		if e.Err != nil {
			ev = ev.Err(e.Err)
		}
		ev.Msg("agent " + string(e.Kind))
	})
}

package fleet

import "github.com/rs/zerolog"

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

// Package cli holds what the binaries share: flags with environment twins,
// the root logger, NATS connection options and the health endpoint. It is
// internal: the binaries' configuration surface is documented in
// docs/operations.md, not exported as an API.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// EnvName is the environment twin of a flag: "nats-url" → "PTC_NATS_URL".
func EnvName(flagName string) string {
	return "PTC_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse parses args with fs, taking flags before, between and after the
// positional arguments ("trace ID -json" as "trace -json ID"), and
// returns the positional arguments in order. Everything after "--" is
// positional.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return append(pos, tail...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// Lookup reads an environment variable and reports whether it is set, as
// os.LookupEnv does: a variable set to "" is set (PTC_HEALTH_ADDR= turns
// an endpoint off), an unset one leaves the flag's default.
type Lookup func(string) (string, bool)

// Getenv returns the variable's value, "" when it is unset.
func (l Lookup) Getenv(name string) string {
	v, _ := l(name)
	return v
}

// WithFormerName returns a Lookup that answers the variable name, when it
// is unset, from its former name former (a renamed variable keeps working).
// used reports whether the former name was read, so that the caller warns
// once its logger exists.
func WithFormerName(lookup Lookup, name, former string) (_ Lookup, used func() bool) {
	var read bool
	l := func(k string) (string, bool) {
		v, ok := lookup(k)
		if !ok && k == name {
			if v, ok = lookup(former); ok {
				read = true
			}
		}
		return v, ok
	}
	return l, func() bool { return read }
}

// FallbackModelFlag is the flag (its variable PTC_FALLBACK_MODEL_NAME) of
// the name of the model a mission runs on when it names none. The name
// says it holds a name, and it does not start with PTC_MODEL_, the prefix
// of the variables that configure models (PTC_MODEL_DEFAULT is the spec of
// the model named "default").
const FallbackModelFlag = "fallback-model-name"

// FallbackModelFormerEnv is the former name of FallbackModelFlag's
// variable, still read with a warning.
const FallbackModelFormerEnv = "PTC_DEFAULT_MODEL"

// FormerFallbackModelWarning is the warning logged when
// FallbackModelFormerEnv was read.
const FormerFallbackModelWarning = "PTC_DEFAULT_MODEL is read as PTC_FALLBACK_MODEL_NAME, its new name " +
	"(PTC_DEFAULT_MODEL is too easily confused with PTC_MODEL_DEFAULT, the spec of the model named default); rename it"

// MapEnv is the Lookup of a fixed set of variables (tests).
func MapEnv(vars map[string]string) Lookup {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

// ApplyEnv sets every flag of fs that was not given on the command line from
// its environment twin (EnvName), if that is set, even to "": an empty
// variable gives the flag an empty value (which turns an address flag off),
// an unset one leaves its default. It returns an error naming the variable
// when a value does not parse. Call it after fs.Parse.
func ApplyEnv(fs *flag.FlagSet, lookup Lookup) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		v, ok := lookup(EnvName(f.Name))
		if !ok {
			return
		}
		if v == "" {
			if g, ok := f.Value.(flag.Getter); !ok || !isString(g.Get()) {
				// An empty number, duration or boolean means nothing: keep the default.
				return
			}
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err))
		}
	})
	return errors.Join(errs...)
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// IsSet reports whether fs's flag name was given, on the command line or
// by its environment twin (ApplyEnv), rather than left at its default.
func IsSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// EnvNames lists the environment twins of fs's flags, sorted; the k8s
// manifest test checks that manifests only set variables a binary reads.
func EnvNames(fs *flag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, EnvName(f.Name)) })
	sort.Strings(out)
	return out
}

// Usage installs a usage func on fs that lists each flag with its
// environment twin.
func Usage(fs *flag.FlagSet, synopsis string) {
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: %s\n\nflags (each also read from its environment variable):\n", synopsis)
		fs.VisitAll(func(f *flag.Flag) {
			def := ""
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
				def = fmt.Sprintf(" (default %s)", f.DefValue)
			}
			fmt.Fprintf(w, "  -%s  [%s]\n      %s%s\n", f.Name, EnvName(f.Name), f.Usage, def)
		})
		fmt.Fprintf(w, "  -version\n      print the version and exit (alone; not read from the environment)\n")
	}
}

// LogOptions configures the root logger.
type LogOptions struct {
	Level  string // trace, debug, info (default), warn, error
	Format string // json (default) or console
}

// Register adds -log-level and -log-format to fs.
func (o *LogOptions) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.Level, "log-level", "info", "log level: trace, debug, info, warn or error")
	fs.StringVar(&o.Format, "log-format", "json", "log format: json or console")
}

// Logger builds the root logger writing to w. It is built once in main and
// passed down; nothing in this module uses zerolog's global logger.
func (o LogOptions) Logger(w io.Writer, component string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(o.Level))
	if err != nil || o.Level == "" {
		return zerolog.Nop(), fmt.Errorf("log level %q: want trace, debug, info, warn or error", o.Level)
	}
	switch o.Format {
	case "json", "":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w)}
	default:
		return zerolog.Nop(), fmt.Errorf("log format %q: want json or console", o.Format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Str("component", component).Logger(), nil
}

// NATSOptions says how to reach NATS. An empty URL means "start an embedded
// server" (the binaries' no-setup mode).
type NATSOptions struct {
	URL         string
	Creds       string // .creds file (JWT + nkey)
	NKey        string // nkey seed file
	User        string
	Password    string
	TLSCA       string
	TLSCert     string
	TLSKey      string
	InboxPrefix string
	Name        string
}

// Register adds the -nats-* flags to fs.
func (o *NATSOptions) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.URL, "nats-url", "", "NATS server URL(s), comma separated; empty starts an embedded server")
	fs.StringVar(&o.Creds, "nats-creds", "", "NATS credentials file (JWT and nkey)")
	fs.StringVar(&o.NKey, "nats-nkey", "", "NATS nkey seed file")
	fs.StringVar(&o.User, "nats-user", "", "NATS user name")
	fs.StringVar(&o.Password, "nats-password", "", "NATS password")
	fs.StringVar(&o.TLSCA, "nats-tls-ca", "", "CA certificate file for the NATS connection")
	fs.StringVar(&o.TLSCert, "nats-tls-cert", "", "client certificate file for the NATS connection")
	fs.StringVar(&o.TLSKey, "nats-tls-key", "", "client key file for the NATS connection")
	fs.StringVar(&o.InboxPrefix, "nats-inbox-prefix", "", "custom inbox prefix (for restricted subject permissions)")
}

// PlaceholderSecretPrefix starts every placeholder value of the shipped
// Secrets (deploy/k8s/fleet/secrets.yaml); the binaries and the NATS
// servers refuse to start with one.
const PlaceholderSecretPrefix = "change-me"

// IsPlaceholderSecret reports whether s is a placeholder left from the
// shipped Secrets.
func IsPlaceholderSecret(s string) bool { return strings.HasPrefix(s, PlaceholderSecretPrefix) }

// Validate checks that the options fit together and that the password is
// not a placeholder.
func (o NATSOptions) Validate() error {
	if (o.User == "") != (o.Password == "") {
		return errors.New("nats-user and nats-password go together")
	}
	if IsPlaceholderSecret(o.Password) {
		return fmt.Errorf("nats-password is a placeholder (%s…): set the real password in the Secret before starting (docs/operations.md)", PlaceholderSecretPrefix)
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return errors.New("nats-tls-cert and nats-tls-key go together")
	}
	n := 0
	for _, s := range []string{o.Creds, o.NKey, o.User} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return errors.New("choose one of nats-creds, nats-nkey and nats-user")
	}
	return nil
}

// Options returns the nats.Options for a connection that reconnects forever
// and logs connection events.
func (o NATSOptions) Options(log zerolog.Logger) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn().Err(err).Msg("nats disconnected")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info().Str("url", nc.ConnectedUrlRedacted()).Msg("nats reconnected") }),
		nats.ErrorHandler(func(_ *nats.Conn, s *nats.Subscription, err error) {
			ev := log.Error().Err(err)
			if s != nil {
				ev = ev.Str("subject", s.Subject)
			}
			ev.Msg("nats async error")
		}),
	}
	if o.Name != "" {
		opts = append(opts, nats.Name(o.Name))
	}
	switch {
	case o.Creds != "":
		opts = append(opts, nats.UserCredentials(o.Creds))
	case o.NKey != "":
		opt, err := nats.NkeyOptionFromSeed(o.NKey)
		if err != nil {
			return nil, fmt.Errorf("nats-nkey: %w", err)
		}
		opts = append(opts, opt)
	case o.User != "":
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	if o.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(o.InboxPrefix))
	}
	return opts, nil
}

// Connect makes a long-running process's first connection to NATS: when
// the server is not reachable yet (it starts after the process, or is
// restarting), it keeps retrying (nats.RetryOnFailedConnect) until the
// connection is up or ctx ends, logging once that it waits.
func Connect(ctx context.Context, addr string, opts []nats.Option, log zerolog.Logger) (*nats.Conn, error) {
	up := make(chan struct{}, 1)
	opts = append(slices.Clone(opts), nats.RetryOnFailedConnect(true),
		nats.ConnectHandler(func(*nats.Conn) {
			select {
			case up <- struct{}{}:
			default:
			}
		}))
	nc, err := nats.Connect(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats %s: %w", RedactURL(addr), err)
	}
	if nc.IsConnected() {
		return nc, nil
	}
	log.Warn().Str("url", RedactURL(addr)).Msg("nats not reachable yet; retrying every second")
	select {
	case <-up:
		log.Info().Str("url", nc.ConnectedUrlRedacted()).Msg("nats connected")
		return nc, nil
	case <-ctx.Done():
		nc.Close()
		return nil, fmt.Errorf("connect to nats %s: gave up waiting: %w", RedactURL(addr), context.Cause(ctx))
	}
}

// RedactURL returns a comma-separated URL list with passwords hidden.
func RedactURL(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// Dial connects to url as the client name, with the options o gives and
// the first connection retried (Connect).
func (o NATSOptions) Dial(ctx context.Context, url, name string, log zerolog.Logger) (*nats.Conn, error) {
	o.Name = name
	opts, err := o.Options(log)
	if err != nil {
		return nil, err
	}
	return Connect(ctx, url, opts, log)
}

// Redacted returns a printable form of the options with secrets hidden, for
// the one "config" log line each binary writes at start.
func (o NATSOptions) Redacted() map[string]any {
	m := map[string]any{"url": o.URL, "embedded": o.URL == ""}
	if o.Creds != "" {
		m["creds"] = o.Creds
	}
	if o.NKey != "" {
		m["nkey"] = o.NKey
	}
	if o.User != "" {
		m["user"] = o.User
		m["password"] = "[redacted]"
	}
	if o.TLSCA != "" || o.TLSCert != "" {
		m["tls"] = true
	}
	return m
}

// isTerminal reports whether w is a character device (colour is only for
// people looking at a terminal, not for files and pipes).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

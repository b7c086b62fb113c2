package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Health serves /healthz (liveness) and /readyz (readiness) for Kubernetes
// probes, and /metrics when Metrics is set. Live reports whether the process
// should keep running; Ready whether it should receive work (a draining
// worker is live but not ready).
type Health struct {
	Live  func() error
	Ready func() error
	// Metrics serves GET /metrics (Prometheus exposition); nil: no
	// /metrics.
	Metrics http.Handler
}

// Handler returns the probe handler.
func (h Health) Handler() http.Handler {
	mux := http.NewServeMux()
	probe := func(check func() error) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if check != nil {
				if err := check(); err != nil {
					w.WriteHeader(http.StatusServiceUnavailable)
					_ = json.NewEncoder(w).Encode(map[string]string{"status": "unavailable", "error": err.Error()})
					return
				}
			}
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "ok"})
		}
	}
	mux.HandleFunc("GET /healthz", probe(h.Live))
	mux.HandleFunc("GET /readyz", probe(h.Ready))
	if h.Metrics != nil {
		mux.Handle("GET /metrics", h.Metrics)
	}
	return mux
}

// ServeOn serves the probes on ln until ctx ends (ListenFlag opens ln).
func (h Health) ServeOn(ctx context.Context, ln net.Listener) error {
	return ServeListener(ctx, ln, h.Handler())
}

// Serve listens on addr and serves the probes until ctx ends. An empty addr
// serves nothing and returns when ctx ends. The bound address is sent on
// bound (if not nil) once listening, which tests use with addr ":0".
func (h Health) Serve(ctx context.Context, addr string, bound chan<- string) error {
	if addr == "" {
		<-ctx.Done()
		return nil
	}
	return ServeHTTP(ctx, addr, h.Handler(), bound)
}

// ServeHTTP listens on addr and serves handler until ctx ends, then shuts
// the server down (2 s for requests in flight). The bound address is sent
// on bound (if not nil) once listening, which tests use with addr ":0".
func ServeHTTP(ctx context.Context, addr string, handler http.Handler, bound chan<- string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if bound != nil {
		bound <- ln.Addr().String()
	}
	return ServeListener(ctx, ln, handler)
}

// ServeListener serves handler on ln until ctx ends, then shuts the server
// down (2 s for requests in flight).
func ServeListener(ctx context.Context, ln net.Listener, handler http.Handler) error {
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	// The listener may also be closed by its owner as it returns
	// (ListenFlag's caller): a stop, not a failure.
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// Listened is the outcome of ListenFlag.
type Listened struct {
	// Listener is nil when the address is empty: the endpoint is off.
	Listener net.Listener
	// Busy is the default address that was in use, when the listener took
	// a free port instead; "" otherwise.
	Busy string
}

// Close closes the listener, if there is one.
func (l Listened) Close() {
	if l.Listener != nil {
		_ = l.Listener.Close()
	}
}

// WarnBusy logs, when the default address was busy, that the endpoint
// named what listens on a free port instead.
func (l Listened) WarnBusy(log *zerolog.Logger, what string) {
	if l.Busy != "" {
		log.Warn().Str("busy", l.Busy).Str("addr", l.Addr()).Msg("default " + what + " address in use (another process on this machine): listening on a free port instead")
	}
}

// Addr is the address listened on, "" when the endpoint is off.
func (l Listened) Addr() string {
	if l.Listener == nil {
		return ""
	}
	return l.Listener.Addr().String()
}

// ListenFlag listens on the address of fs's flag name (an endpoint such as
// -health-addr), after fs.Parse and ApplyEnv:
//   - an empty address turns the endpoint off (no listener, no error);
//   - an address the user chose (the flag or its environment twin) that
//     cannot be listened on is an error naming the flag and the variable,
//     so the process stops at once instead of running without it;
//   - the default address, when busy (a second process of the same kind
//     on one machine), gives way to a free port on the same host, and
//     Busy says so: processes started side by side with default flags all
//     start.
func ListenFlag(fs *flag.FlagSet, name string) (Listened, error) {
	f := fs.Lookup(name)
	if f == nil {
		return Listened{}, fmt.Errorf("no flag -%s", name)
	}
	addr := f.Value.String()
	if addr == "" {
		return Listened{}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return Listened{Listener: ln}, nil
	}
	if IsSet(fs, name) || !errors.Is(err, syscall.EADDRINUSE) {
		return Listened{}, fmt.Errorf("-%s %s: %w (choose another address with -%s or %s, or set it empty to turn the endpoint off)",
			name, addr, err, name, EnvName(name))
	}
	host, _, _ := net.SplitHostPort(addr)
	ln, err2 := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err2 != nil {
		return Listened{}, fmt.Errorf("-%s %s: %w; a free port: %w", name, addr, err, err2)
	}
	return Listened{Listener: ln, Busy: addr}, nil
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"
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
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

package embedded

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Options configures an embedded server. The zero value is ready to use: a
// server listening on a random loopback port with JetStream in a fresh
// temporary directory.
type Options struct {
	// Dir is the JetStream store directory. Empty means a new temporary
	// directory, removed by Close; a given Dir is kept.
	Dir string
	// Host is the listen address; default "127.0.0.1".
	Host string
	// Port is the client port; 0 picks a free port.
	Port int
	// NoListen serves in-process connections only (Conn); ClientURL is
	// then empty.
	NoListen bool
	// ReadyTimeout bounds the wait for the server to accept connections;
	// default 10s.
	ReadyTimeout time.Duration
	// MaxMemory and MaxStore bound JetStream resources (0 = server default).
	MaxMemory int64
	MaxStore  int64
	// MaxPayload bounds a message's size in bytes (0: the server's
	// default, 1 MiB; at most 64 MiB).
	MaxPayload int32
}

// Server is a running embedded NATS server with JetStream.
type Server struct {
	ns      *server.Server
	dir     string
	ownDir  bool
	closeMu sync.Once
}

// ErrNotReady is returned by Start when the server does not accept
// connections within Options.ReadyTimeout.
var ErrNotReady = errors.New("embedded: nats server not ready")

// Start starts a server and waits until it accepts connections.
func Start(opts Options) (*Server, error) {
	s := &Server{dir: opts.Dir}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "ptc-nats-*")
		if err != nil {
			return nil, fmt.Errorf("embedded: store dir: %w", err)
		}
		s.dir, s.ownDir = d, true
	}
	host := opts.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := opts.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	so := &server.Options{
		ServerName:         "ptc-embedded",
		Host:               host,
		Port:               port,
		DontListen:         opts.NoListen,
		JetStream:          true,
		StoreDir:           s.dir,
		JetStreamMaxMemory: opts.MaxMemory,
		JetStreamMaxStore:  opts.MaxStore,
		MaxPayload:         opts.MaxPayload,
		NoLog:              true,
		NoSigs:             true,
		// The fleet's subjects name their mission (a submission, a status
		// key, a result, an event batch, an acknowledgement, a reply), so
		// nearly every publish is to a subject the server routes once:
		// its shared cache of routed subjects missed 17 of 18 lookups per
		// mission, and each miss took the index's write lock to add an
		// entry that a sweep later removed. Without the cache a lookup
		// reads the index under its read lock; each connection keeps its
		// own cache of recent subjects either way.
		NoSublistCache: true,
	}
	ns, err := server.NewServer(so)
	if err != nil {
		s.removeDir()
		return nil, fmt.Errorf("embedded: new server: %w", err)
	}
	ns.Start()
	wait := opts.ReadyTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	if !ns.ReadyForConnections(wait) {
		ns.Shutdown()
		s.removeDir()
		return nil, fmt.Errorf("%w after %s", ErrNotReady, wait)
	}
	s.ns = ns
	return s, nil
}

// ClientURL is the nats:// URL other processes connect to ("" with
// NoListen).
func (s *Server) ClientURL() string {
	if s.ns.ClientURL() == "" || s.ns.Addr() == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// Dir is the JetStream store directory.
func (s *Server) Dir() string { return s.dir }

// Conn opens a client connection through an in-process pipe (no TCP).
// The caller closes it.
//
// Its writes have no deadline (nats.FlusherTimeout 0; an option given
// here sets one): the pipe's reader is the server's read loop in this
// process, which a deadline cannot unstick, and on a pipe each deadline
// set is a timer allocated, two for every write of the connection's
// flusher.
func (s *Server) Conn(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.InProcessServer(s.ns), nats.Name("ptc-embedded-client"), nats.FlusherTimeout(0)}, opts...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("embedded: connect: %w", err)
	}
	return nc, nil
}

// Close shuts the server down, waits for it to stop and removes the store
// directory it created. It is idempotent.
func (s *Server) Close() {
	s.closeMu.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		s.removeDir()
	})
}

func (s *Server) removeDir() {
	if s.ownDir {
		_ = os.RemoveAll(s.dir)
	}
}

// Connect connects to url, or, when url is empty, starts an embedded server
// with opts and connects to it in-process: the "no setup" mode of the
// binaries. The returned close func closes the connection and, if one was
// started, the server (and its temporary store). The returned *Server is nil
// when url was given; otherwise its ClientURL lets other processes join.
func Connect(url string, opts Options, natsOpts ...nats.Option) (*nats.Conn, *Server, func(), error) {
	if url != "" {
		nc, err := nats.Connect(url, natsOpts...)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("embedded: connect %s: %w", url, err)
		}
		return nc, nil, nc.Close, nil
	}
	s, err := Start(opts)
	if err != nil {
		return nil, nil, nil, err
	}
	nc, err := s.Conn(natsOpts...)
	if err != nil {
		s.Close()
		return nil, nil, nil, err
	}
	return nc, s, func() { nc.Close(); s.Close() }, nil
}

// Package fleettest starts an embedded NATS JetStream server for tests: it
// lives in the test's temporary directory and is closed, with every
// connection opened through it, when the test ends.
package fleettest

import (
	"net"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
)

// Server is an embedded JetStream server bound to one test.
type Server struct {
	*embedded.Server
	tb testing.TB
}

// Start starts an embedded JetStream server in tb's temporary directory and
// closes it when tb ends; it fails tb if the server does not start.
func Start(tb testing.TB) *Server {
	tb.Helper()
	srv, err := embedded.Start(embedded.Options{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Close)
	return &Server{Server: srv, tb: tb}
}

// Conn opens a connection to the server that is closed when the test ends;
// it fails the test if the connection cannot be opened.
func (s *Server) Conn() *nats.Conn {
	s.tb.Helper()
	nc, err := s.Server.Conn()
	if err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(nc.Close)
	return nc
}

// For returns the same server bound to tb (a subtest of the test that
// started it): connections opened through it are closed when tb ends, and
// a failure to open one fails tb.
func (s *Server) For(tb testing.TB) *Server {
	return &Server{Server: s.Server, tb: tb}
}

// FreePort returns a TCP port of the loopback interface that is free now,
// for a server a test starts (and restarts) on a fixed port.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

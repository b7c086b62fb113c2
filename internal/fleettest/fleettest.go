// Package fleettest starts an embedded NATS JetStream server for tests: it
// lives in the test's temporary directory and is closed, with every
// connection opened through it, when the test ends.
package fleettest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
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
// for a server a test starts (and restarts) on a fixed port. The port is
// drawn at random below the kernel's ephemeral range: a port of that
// range (the one a listen on port 0 gets) may be given to an outgoing
// connection (a client reconnecting) while the server is down between a
// kill and its restart, which then cannot listen there again.
func FreePort(tb testing.TB) int {
	tb.Helper()
	low, _ := ephemeralPorts()
	for range 100 {
		port := minFixedPort + rand.IntN(low-minFixedPort)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken
		}
		_ = l.Close()
		return port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// minFixedPort is the lowest port FreePort draws: above the ports
// services commonly use.
const minFixedPort = 20000

// ephemeralPorts is the kernel's range of ports for outgoing connections
// (Linux's net.ipv4.ip_local_port_range; where that cannot be read,
// Linux's default, which starts below macOS's and Windows' 49152 too).
func ephemeralPorts() (low, high int) {
	low, high = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return low, high
	}
	var l, h int
	if n, err := fmt.Sscan(string(b), &l, &h); n == 2 && err == nil && l > minFixedPort+1000 && h >= l {
		return l, h
	}
	return low, high
}

package fleet

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
)

// embeddedConn starts an embedded JetStream server in t.TempDir() and
// returns an in-process connection to it; both are closed by t.Cleanup.
func embeddedConn(t testing.TB) *nats.Conn {
	t.Helper()
	srv, err := embedded.Start(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	nc, err := srv.Conn()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

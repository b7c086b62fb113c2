package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestRegisteredToolIsReachableAtOnce: once Register returns, a call from
// another connection reaches the tool: the server holds the endpoint's
// subscription, not only the service's connection buffer (a process that
// says it is ready after registering, or a test that calls at once, would
// otherwise be told no tool service runs).
func TestRegisteredToolIsReachableAtOnce(t *testing.T) {
	srv, caller := runJetStream(t)
	for i := range 20 {
		nc := connect(t, srv)
		svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: fmt.Sprintf("svc%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Stop(context.Background()) })
		if err := svc.Register("echo", fleet.ToolSpec{}, func(_ context.Context, args map[string]any) (any, error) {
			return args, nil
		}); err != nil {
			t.Fatal(err)
		}
		// any answer, a refusal of the empty body included, is the
		// service's: only an unreachable endpoint gets no responders
		_, err = caller.Request(messages.ToolSubject(fmt.Sprintf("svc%d", i), "echo"), nil, 10*time.Second)
		if errors.Is(err, nats.ErrNoResponders) {
			t.Fatalf("service %d: a call right after Register found no responders", i)
		}
		if err != nil {
			t.Fatalf("service %d: %v", i, err)
		}
	}
}

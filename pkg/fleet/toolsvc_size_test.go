package fleet_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A result too large for one NATS message is answered with a tool error the
// model can act on, not dropped (the caller would only see a timeout).
func TestToolServiceOversizedResult(t *testing.T) {
	_, nc := runJetStream(t)
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	limit := int(nc.MaxPayload())
	if err := svc.Register("dump", fleet.ToolSpec{}, func(_ context.Context, args map[string]any) (any, error) {
		n, _ := args["n"].(int64)
		return strings.Repeat("x", int(n)), nil
	}); err != nil {
		t.Fatal(err)
	}
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"dump"}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	small, err := box.Call(ctx, "dump", map[string]any{"n": int64(limit / 2)})
	if err != nil || len(small.(string)) != limit/2 {
		t.Fatalf("half the limit: %d bytes, %v", len(small.(string)), err)
	}
	_, err = box.Call(ctx, "dump", map[string]any{"n": int64(limit + 10)})
	var te *fleet.ToolError
	if !errors.As(err, &te) || te.Code != messages.ToolErrFailed || !strings.Contains(te.Message, "ask for less") {
		t.Fatalf("oversized result: %v", err)
	}
}

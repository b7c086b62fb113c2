package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
)

// A tool author's own service on their own NATS server: "local" given the
// server starts only its workers, and the scripted mission calls the
// author's tool there. Another worker on the server, with no model at all
// (a worker started without PTC_NATS_URL whose server the author uses),
// may take the mission too: it carries its script, so that worker runs it
// as well.
func TestLocalUsesGivenNATSServer(t *testing.T) {
	srv := fleettest.Start(t)
	nc := srv.Conn()
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "weather"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	err = svc.Register("get_weather", fleet.ToolSpec{Signature: "(city :string) -> {temp_c :int}"},
		func(_ context.Context, args map[string]any) (any, error) {
			return map[string]any{"temp_c": int64(len(args["city"].(string)) * 5)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	other, err := fleet.NewWorker(srv.Conn(), fleet.WorkerConfig{ID: "other", Runner: agentrun.New(agentrun.Config{}), Slots: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Stop() })
	file := filepath.Join(t.TempDir(), "weather.yaml")
	mission := "agent:\n  prompt: How warm is Oslo?\n  tools: [get_weather]\nscript:\n  - |\n    ```clojure\n    (return (tool/get_weather {:city \"Oslo\"}))\n    ```\n"
	if err := os.WriteFile(file, []byte(mission), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	// the URL from the environment twin, as a tool author would set it
	err = run(ctx, []string{"local", "-workers", "1", file}, testEnv(map[string]string{"PTC_NATS_URL": srv.ClientURL()}), &out, &errOut)
	if err != nil {
		t.Fatalf("local: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	got := out.String()
	for _, want := range []string{"model: SCRIPTED", "fleet: NATS " + srv.ClientURL() + ", 1 workers", "tools: the server's tool services",
		"→ get_weather", `"temp_c": 20`} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "example shop") || strings.Contains(got, "embedded NATS") {
		t.Errorf("local started its own server or the example tools:\n%s", got)
	}

	// the example tools only when asked
	out.Reset()
	err = run(ctx, []string{"local", "-workers", "1", "-nats-url", srv.ClientURL(), "-example-tools", "../../examples/missions/top-customers.yaml"},
		testEnv(nil), &out, &errOut)
	if err != nil {
		t.Fatalf("local -example-tools: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{"tools: example shop (", "and the server's tool services", `"orders_scanned": 1279`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

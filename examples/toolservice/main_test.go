package main

import (
	"bytes"
	"context"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
)

// The example builds as a program of its own, serves get_weather on a
// real NATS server with JetStream, answers a call (and refuses a
// misspelled argument), and stops promptly on SIGTERM.
func TestToolServiceBinary(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	bin := filepath.Join(t.TempDir(), "toolservice")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PTC_NATS_URL="+srv.ClientURL())
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()

	nc, err := srv.Conn()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var sig string
	for sig == "" && ctx.Err() == nil {
		infos, _ := fleet.Discover(ctx, nc, 300*time.Millisecond)
		for _, ti := range infos {
			if ti.Name == "get_weather" {
				sig = ti.Signature
			}
		}
	}
	if sig != "(city :string) -> {city :string, temp_c :int, sky :string}" {
		t.Fatalf("get_weather signature %q\n%s", sig, logs.String())
	}
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"get_weather"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := box.Call(ctx, "get_weather", map[string]any{"city": "Oslo"})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := out.(map[string]any)
	if w["city"] != "Oslo" || w["sky"] == nil {
		t.Errorf("get_weather = %#v", out)
	}
	if _, err := box.Call(ctx, "get_weather", map[string]any{"citty": "Oslo"}); err == nil || !strings.Contains(err.Error(), `unknown field "citty"`) {
		t.Errorf("misspelled argument: err = %v", err)
	}

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to stop", d)
	}
}

// The example imports only public packages of the module (and others'):
// a module of its own can copy it.
func TestToolServiceImportsOnlyPublicPackages(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if strings.HasPrefix(p, "github.com/ptcfleet/ptc/") && !strings.HasPrefix(p, "github.com/ptcfleet/ptc/pkg/") {
			t.Errorf("main.go imports %s: another module cannot", p)
		}
	}
}

package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestApplyEnv(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	slots := fs.Int("slots", 4, "")
	url := fs.String("nats-url", "", "")
	grace := fs.Duration("drain-grace", time.Second, "")
	if err := fs.Parse([]string{"-slots", "2"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PTC_SLOTS": "9", "PTC_NATS_URL": "nats://a:4222", "PTC_DRAIN_GRACE": "30s"}
	if err := ApplyEnv(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if *slots != 2 {
		t.Errorf("command line must win over env: slots = %d", *slots)
	}
	if *url != "nats://a:4222" || *grace != 30*time.Second {
		t.Errorf("env not applied: url=%q grace=%v", *url, *grace)
	}
	env["PTC_DRAIN_GRACE"] = "soon"
	fs2 := flag.NewFlagSet("y", flag.ContinueOnError)
	fs2.Duration("drain-grace", 0, "")
	_ = fs2.Parse(nil)
	err := ApplyEnv(fs2, func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), `PTC_DRAIN_GRACE="soon"`) {
		t.Errorf("err = %v, want one naming the variable", err)
	}
	if got := EnvNames(fs); strings.Join(got, ",") != "PTC_DRAIN_GRACE,PTC_NATS_URL,PTC_SLOTS" {
		t.Errorf("EnvNames = %v", got)
	}
}

func TestNATSOptionsValidate(t *testing.T) {
	cases := []struct {
		o    NATSOptions
		want string
	}{
		{NATSOptions{}, ""},
		{NATSOptions{User: "u"}, "go together"},
		{NATSOptions{TLSCert: "c"}, "go together"},
		{NATSOptions{User: "u", Password: "p", Creds: "f"}, "choose one"},
		{NATSOptions{Creds: "f"}, ""},
		{NATSOptions{User: "worker", Password: "change-me-worker"}, "nats-password is a placeholder"},
	}
	for _, c := range cases {
		err := c.o.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: err = %v, want %q", c.o, err, c.want)
		}
	}
	r := NATSOptions{User: "u", Password: "hunter2"}.Redacted()
	if r["password"] != "[redacted]" {
		t.Errorf("password not redacted: %v", r)
	}
}

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	log, err := LogOptions{Level: "info", Format: "json"}.Logger(&buf, "worker")
	if err != nil {
		t.Fatal(err)
	}
	log.Debug().Msg("hidden")
	log.Info().Str("mission_id", "m1").Msg("hello")
	if strings.Contains(buf.String(), "hidden") || !strings.Contains(buf.String(), `"component":"worker"`) || !strings.Contains(buf.String(), `"mission_id":"m1"`) {
		t.Errorf("log output = %s", buf.String())
	}
	if _, err := (LogOptions{Level: "loud"}).Logger(io.Discard, "x"); err == nil {
		t.Error("bad level accepted")
	}
	if _, err := (LogOptions{Level: "info", Format: "xml"}).Logger(io.Discard, "x"); err == nil {
		t.Error("bad format accepted")
	}
}

func TestHealth(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	h := Health{Ready: func() error {
		if !ready.Load() {
			return io.ErrClosedPipe
		}
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bound := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, "127.0.0.1:0", bound) }()
	addr := <-bound
	get := func(path string) int {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("/readyz"); c != 200 {
		t.Errorf("readyz = %d", c)
	}
	ready.Store(false)
	if c := get("/readyz"); c != 503 {
		t.Errorf("readyz while draining = %d, want 503", c)
	}
	if c := get("/healthz"); c != 200 {
		t.Errorf("healthz = %d", c)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

func TestExit(t *testing.T) {
	var b strings.Builder
	if c := exit(&b, "worker", errors.New("no NATS server"), nil); c != 1 || b.String() != "worker: no NATS server\n" {
		t.Errorf("exit = %d, printed %q", c, b.String())
	}
	b.Reset()
	if c := exit(&b, "worker", fmt.Errorf("flags: %w", flag.ErrHelp), nil); c != 1 || b.Len() != 0 {
		t.Errorf("help: exit = %d, printed %q", c, b.String())
	}
	if c := exit(&b, "dispatcher", errors.New("failed"), func(error) int { return 3 }); c != 3 {
		t.Errorf("exit code = %d, want the command's 3", c)
	}
}

package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
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
	if err := ApplyEnv(fs, MapEnv(env)); err != nil {
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
	err := ApplyEnv(fs2, MapEnv(env))
	if err == nil || !strings.Contains(err.Error(), `PTC_DRAIN_GRACE="soon"`) {
		t.Errorf("err = %v, want one naming the variable", err)
	}
	if got := EnvNames(fs); strings.Join(got, ",") != "PTC_DRAIN_GRACE,PTC_NATS_URL,PTC_SLOTS" {
		t.Errorf("EnvNames = %v", got)
	}
}

// A variable set to "" empties a string flag (an address: the endpoint is
// off); an unset one leaves the default; an empty number keeps its default.
func TestApplyEnvEmptyIsSet(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	health := fs.String("health-addr", ":8081", "")
	ui := fs.String("ui-addr", "127.0.0.1:8090", "")
	slots := fs.Int("slots", 4, "")
	_ = fs.Parse(nil)
	if err := ApplyEnv(fs, MapEnv(map[string]string{"PTC_HEALTH_ADDR": "", "PTC_SLOTS": ""})); err != nil {
		t.Fatal(err)
	}
	if *health != "" || !IsSet(fs, "health-addr") {
		t.Errorf("PTC_HEALTH_ADDR=\"\": health-addr = %q, set %v; want \"\" (off)", *health, IsSet(fs, "health-addr"))
	}
	if *ui != "127.0.0.1:8090" || IsSet(fs, "ui-addr") {
		t.Errorf("unset PTC_UI_ADDR changed ui-addr to %q", *ui)
	}
	if *slots != 4 {
		t.Errorf("empty PTC_SLOTS: slots = %d, want the default 4", *slots)
	}
}

// ListenFlag: empty is off; a busy default gives way to a free port; a busy
// address the user chose is an error naming the flag and its variable.
func TestListenFlag(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	newFS := func() *flag.FlagSet {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.String("health-addr", busy.Addr().String(), "")
		return fs
	}

	fs := newFS()
	_ = fs.Parse(nil)
	l, err := ListenFlag(fs, "health-addr")
	if err != nil {
		t.Fatalf("busy default: %v", err)
	}
	if l.Busy != busy.Addr().String() || l.Listener == nil || l.Addr() == busy.Addr().String() {
		t.Errorf("busy default: listened on %q, busy %q", l.Addr(), l.Busy)
	}
	if !strings.HasPrefix(l.Addr(), "127.0.0.1:") {
		t.Errorf("fallback left the default's host: %q", l.Addr())
	}
	l.Listener.Close()

	for _, how := range []string{"flag", "env"} {
		fs := newFS()
		if how == "flag" {
			_ = fs.Parse([]string{"-health-addr", busy.Addr().String()})
		} else {
			_ = fs.Parse(nil)
			if err := ApplyEnv(fs, MapEnv(map[string]string{"PTC_HEALTH_ADDR": busy.Addr().String()})); err != nil {
				t.Fatal(err)
			}
		}
		_, err := ListenFlag(fs, "health-addr")
		if err == nil || !strings.Contains(err.Error(), "-health-addr "+busy.Addr().String()) || !strings.Contains(err.Error(), "PTC_HEALTH_ADDR") ||
			!strings.Contains(err.Error(), "address already in use") {
			t.Errorf("%s: busy chosen address: err = %v", how, err)
		}
	}

	fs = newFS()
	_ = fs.Parse([]string{"-health-addr", ""})
	if l, err := ListenFlag(fs, "health-addr"); err != nil || l.Listener != nil || l.Addr() != "" {
		t.Errorf("empty address: %+v, %v; want off", l, err)
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
	// -h printed the usage as asked: success, whatever the command's codes.
	if c := exit(&b, "worker", fmt.Errorf("flags: %w", flag.ErrHelp), nil); c != 0 || b.Len() != 0 {
		t.Errorf("help: exit = %d, printed %q", c, b.String())
	}
	if c := exit(&b, "dispatcher", flag.ErrHelp, func(error) int { return 1 }); c != 0 || b.Len() != 0 {
		t.Errorf("dispatcher help: exit = %d, printed %q", c, b.String())
	}
	if c := exit(&b, "dispatcher", errors.New("failed"), func(error) int { return 3 }); c != 3 {
		t.Errorf("exit code = %d, want the command's 3", c)
	}
}

// -version alone prints the version line and runs nothing; with other
// arguments it is left to the binary's flags. Main is run in a process of
// its own (this test binary again), as it reads os.Args.
func TestMainAnswersVersion(t *testing.T) {
	if args := os.Getenv("PTC_CLI_TEST_MAIN_ARGS"); args != "" {
		os.Args = append([]string{"worker"}, strings.Fields(args)...)
		Main("worker", func(context.Context) error {
			fmt.Println("ran")
			return nil
		}, nil)
		os.Exit(0)
	}
	for _, c := range []struct {
		args string
		want *regexp.Regexp
	}{
		{"-version", regexp.MustCompile(`^worker (devel(\+[0-9a-f]{12}(\+dirty)?)?|v\d+\.\d+\.\d+\S*) go\S+\n$`)},
		{"--version", regexp.MustCompile(`^worker \S+ go\S+\n$`)},
		{"-version -slots 2", regexp.MustCompile(`^ran\n$`)},
		{"-x", regexp.MustCompile(`^ran\n$`)},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMainAnswersVersion$")
		cmd.Env = append(os.Environ(), "PTC_CLI_TEST_MAIN_ARGS="+c.args)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if !c.want.Match(out) {
			t.Errorf("%s printed %q, want %s", c.args, out, c.want)
		}
	}
}

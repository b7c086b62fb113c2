package main

import (
	"strings"
	"testing"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/ptcfleet/ptc/internal/fleettest"
)

// The flag wins; GOMEMLIMIT, which the runtime has read, is left as it
// is; otherwise 90% of the container's limit; a negative flag, or a
// container without a limit (or none at all), sets none.
func TestSoftMemoryLimit(t *testing.T) {
	limited := memlimit.Limit(1_000_000_000)
	unlimited := func() (uint64, error) { return 0, memlimit.ErrNoLimit }
	noCgroup := func() (uint64, error) { return 0, memlimit.ErrNoCgroup }
	none := func(string) string { return "" }
	gomem := func(k string) string {
		if k == "GOMEMLIMIT" {
			return "460MiB"
		}
		return ""
	}
	for _, c := range []struct {
		name      string
		set       int64
		getenv    func(string) string
		container memlimit.Provider
		want      int64
		from      string
	}{
		{"flag", 300 << 20, gomem, limited, 300 << 20, "soft-memory-limit"},
		{"cgroup", 0, none, limited, 900000000, "cgroup"},
		{"GOMEMLIMIT", 0, gomem, limited, 0, ""},
		{"no limit anywhere", 0, none, unlimited, 0, ""},
		{"not in a cgroup", 0, none, noCgroup, 0, ""},
		{"negative", -1, none, limited, 0, ""},
	} {
		if got, from := softMemoryLimit(c.set, c.getenv, c.container); got != c.want || from != c.from {
			t.Errorf("%s: softMemoryLimit = %d, %q; want %d, %q", c.name, got, from, c.want, c.from)
		}
	}
}

// A worker given -soft-memory-limit sets the runtime's limit to it, and
// its memory budget follows (three quarters of it).
func TestWorkerSetsItsSoftMemoryLimit(t *testing.T) {
	ns := fleettest.Start(t)
	w := startWorkerProcess(t, "PTC_NATS_URL="+ns.ClientURL(), "PTC_LOG_LEVEL=info", "PTC_SOFT_MEMORY_LIMIT=400000000")
	want := []string{`"soft_memory_limit":400000000,"from":"soft-memory-limit"`, `"memory_budget":300000000`}
	deadline := time.Now().Add(10 * time.Second)
	for {
		logs := w.stderr.String()
		if strings.Contains(logs, want[0]) && strings.Contains(logs, want[1]) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker's log lacks %q or %q:\n%s", want[0], want[1], logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

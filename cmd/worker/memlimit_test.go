package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
)

// cgroupTree writes files (path relative to root: content) under a new
// root and returns it.
func cgroupTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2 own cgroup", map[string]string{"proc/self/cgroup": "0::/kubepods/pod1/c1\n",
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": "536870912\n", "sys/fs/cgroup/memory.max": "max\n"}, 512 << 20},
		{"v2 container at its root", map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "268435456\n"}, 256 << 20},
		{"v2 no limit", map[string]string{"proc/self/cgroup": "0::/user.slice\n", "sys/fs/cgroup/user.slice/memory.max": "max\n"}, 0},
		{"v1 own cgroup", map[string]string{"proc/self/cgroup": "5:cpu,cpuacct:/x\n4:memory:/docker/abc\n0::/\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "1073741824\n"}, 1 << 30},
		{"v1 unlimited", map[string]string{"proc/self/cgroup": "4:memory:/gone\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0},
		{"not a number", map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "lots\n"}, 0},
		{"no cgroup files", map[string]string{"proc/self/cgroup": "0::/a\n"}, 0},
		{"no /proc", map[string]string{}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := cgroupMemoryLimit(cgroupTree(t, c.files))
			if got != c.want || ok != (c.want > 0) {
				t.Errorf("cgroupMemoryLimit = %d, %v; want %d, %v", got, ok, c.want, c.want > 0)
			}
		})
	}
}

// The flag wins; GOMEMLIMIT, which the runtime has read, is left as it
// is; otherwise 90% of the container's limit; a negative flag sets none.
func TestSoftMemoryLimit(t *testing.T) {
	limited := cgroupTree(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "1000000000\n"})
	unlimited := cgroupTree(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"})
	none := func(string) string { return "" }
	gomem := func(k string) string {
		if k == "GOMEMLIMIT" {
			return "460MiB"
		}
		return ""
	}
	for _, c := range []struct {
		name   string
		set    int64
		getenv func(string) string
		root   string
		want   int64
		from   string
	}{
		{"flag", 300 << 20, gomem, limited, 300 << 20, "soft-memory-limit"},
		{"cgroup", 0, none, limited, 900000000, "cgroup"},
		{"GOMEMLIMIT", 0, gomem, limited, 0, ""},
		{"no limit anywhere", 0, none, unlimited, 0, ""},
		{"negative", -1, none, limited, 0, ""},
	} {
		if got, from := softMemoryLimit(c.set, c.getenv, c.root); got != c.want || from != c.from {
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

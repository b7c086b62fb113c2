package k8s_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ptcfleet/ptc/deploy/k8s/natsauth"
)

var update = flag.Bool("update", false, "rewrite the files generated from deploy/k8s/natsauth")

const (
	authConfKey = "  auth.conf: |\n"
	helmBegin   = "    # BEGIN generated from deploy/k8s/natsauth; do not edit\n"
	helmEnd     = "    # END generated from deploy/k8s/natsauth\n"
)

func indent(s, pre string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.TrimSpace(l) != "" {
			b.WriteString(pre)
		}
		b.WriteString(l)
	}
	return b.String()
}

// regenerate returns data with the part between begin and end (end = ""
// for the end of the file) replaced by gen.
func regenerate(t *testing.T, path string, data []byte, begin, end, gen string) []byte {
	t.Helper()
	i := bytes.Index(data, []byte(begin))
	if i < 0 {
		t.Fatalf("%s: no %q", path, strings.TrimSpace(begin))
	}
	i += len(begin)
	j := len(data)
	if end != "" {
		j = bytes.Index(data[i:], []byte(end))
		if j < 0 {
			t.Fatalf("%s: no %q", path, strings.TrimSpace(end))
		}
		j += i
	}
	out := append(append(append([]byte{}, data[:i]...), gen...), data[j:]...)
	return out
}

// TestNATSAuthGenerated: the users and permissions of nats/config.yaml
// (auth.conf) and helm/nats-values.yaml (config.merge.accounts) are what
// deploy/k8s/natsauth generates, so the two cannot drift apart or from the
// role table. Run with -update to rewrite them.
func TestNATSAuthGenerated(t *testing.T) {
	accounts := natsauth.Shipped()
	helm, err := yaml.Marshal(map[string]any{"accounts": natsauth.HelmAccounts(accounts)})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path, begin, end, gen string
	}{
		{filepath.Join("nats", "config.yaml"), authConfKey, "", indent(natsauth.AuthConf(accounts), "    ")},
		{filepath.Join("helm", "nats-values.yaml"), helmBegin, helmEnd, indent(string(helm), "    ")},
	} {
		data, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		want := regenerate(t, f.path, data, f.begin, f.end, f.gen)
		if bytes.Equal(data, want) {
			continue
		}
		if *update {
			if err := os.WriteFile(f.path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s differs from what deploy/k8s/natsauth generates; run go test ./deploy/k8s -run TestNATSAuthGenerated -update", f.path)
	}
}

package k8s_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeDocuments: any input ends as manifests of known kinds with a
// name and the kind's apiVersion, or as an error; never a panic.
func FuzzDecodeDocuments(f *testing.F) {
	_ = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			if data, err := os.ReadFile(path); err == nil {
				f.Add(data)
			}
		}
		return nil
	})
	f.Add([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 3}\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec:\n  scaleTargetRef: {name: w}\n  triggers:\n  - type: nats-jetstream\n    metadata: {natsServerMonitoringEndpoint: n:8222, account: $G, stream: S, consumer: c, lagThreshold: \"4\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := decodeDocuments("fuzz.yaml", data)
		if err != nil {
			return
		}
		if len(ms) == 0 {
			t.Fatal("no error and no manifest")
		}
		for _, m := range ms {
			k, ok := kinds[m.kind]
			if !ok || m.name == "" || m.apiVersion != k.apiVersion || m.obj == nil {
				t.Fatalf("decoded %+v", m)
			}
		}
	})
}

// FuzzParseDockerfile: a Dockerfile that parses names a non-root uid and
// at least one binary installed at an absolute path.
func FuzzParseDockerfile(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile")); err == nil {
		f.Add(string(data))
	}
	f.Add("FROM golang:1.26 AS build\nRUN CGO_ENABLED=0 go build -o /out/ ./cmd/worker \\\n  ./cmd/dispatcher\nFROM gcr.io/distroless/static-debian12:nonroot\nCOPY --from=build /out/worker /out/dispatcher /usr/local/bin/\nUSER 65532:65532\n")
	f.Add("FROM scratch\n")
	f.Fuzz(func(t *testing.T, text string) {
		df, err := parseDockerfile(text)
		if err != nil {
			return
		}
		if df.uid <= 0 || len(df.binaries) == 0 {
			t.Fatalf("parsed %+v without error", df)
		}
		for name, p := range df.binaries {
			if name == "" || !strings.HasPrefix(p, "/") && !strings.HasSuffix(p, name) {
				t.Fatalf("binary %q at %q", name, p)
			}
		}
	})
}

// FuzzParseUsage: every variable parsed from usage output is a PTC_ name
// that occurs in the output.
func FuzzParseUsage(f *testing.F) {
	f.Add("usage: worker [flags]\n\nflags (each also read from its environment variable):\n  -drain-grace  [PTC_DRAIN_GRACE]\n      on SIGTERM, how long (default 25s)\n")
	f.Add("  -x  [PTC_X]\n      (default (default y))")
	f.Fuzz(func(t *testing.T, out string) {
		flags, err := parseUsage(out)
		if err != nil {
			return
		}
		for env := range flags {
			if !strings.HasPrefix(env, "PTC_") || !strings.Contains(out, "["+env+"]") {
				t.Fatalf("parsed %q from %q", env, out)
			}
		}
	})
}

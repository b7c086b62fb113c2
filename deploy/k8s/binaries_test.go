package k8s_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ptcfleet/ptc/internal/webtest"
)

// processEnv is the environment a container of the manifests gets, as the
// kubelet would build it: literal values, ConfigMap entries, Secret keys
// (NATS passwords as the test server knows them, model keys as dummies)
// and the pod name; then the test's overrides.
func processEnv(t *testing.T, pc ptcContainer, ns natsSetup, overrides map[string]string) []string {
	t.Helper()
	secretVar := map[string]string{} // secret/key → NATS server variable
	for _, e := range ns.sts.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			secretVar[e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key] = e.Name
		}
	}
	env := map[string]string{}
	for k, v := range pc.env {
		env[k] = v
	}
	for _, e := range pc.c.Env {
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = "ptc-test-pod"
		case e.ValueFrom.SecretKeyRef != nil:
			r := e.ValueFrom.SecretKeyRef
			if v, ok := secretVar[r.Name+"/"+r.Key]; ok {
				env[e.Name] = ns.vars[v]
			} else {
				env[e.Name] = "test-" + strings.ToLower(r.Key)
			}
		default:
			t.Fatalf("%s: unsupported valueFrom %+v", e.Name, e.ValueFrom)
		}
	}
	for k, v := range overrides {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitStatus polls url until it answers want, the process ends (done) or
// within has passed.
func waitStatus(url string, want int, within time.Duration, done chan error) error {
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		select {
		case perr := <-done:
			done <- perr
			return fmt.Errorf("process exited (%v) before GET %s answered %d", perr, url, want)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET %s: want %d within %s (last: %v)", url, want, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBinariesRunWithManifestEnv starts the real binaries with the
// environment their manifests give them, against a NATS server with the
// manifests' users and permissions (one server, so PTC_REPLICAS is 1 and
// the health port is a free one): the setup Job creates the layout, the
// worker (which may only verify it) and the tool service become
// ready, report ready on /readyz and stop cleanly on SIGTERM within the
// pod's termination grace; the dispatcher Job's command submits the
// example mission. No worker runs while that mission is queued, so no
// model is ever called.
func TestBinariesRunWithManifestEnv(t *testing.T) {
	ms := loadManifests(t)
	ns := natsConfig(t, ms)
	srv := startAuthServer(t, ns)
	bins := buildBinaries(t)
	byBinary := map[string]ptcContainer{}
	var setup *ptcContainer
	for _, pc := range ptcContainers(t, ms) {
		if pc.isSetup() {
			setup = &pc
			continue
		}
		if _, ok := byBinary[pc.binary]; !ok || pc.pod.Spec.RestartPolicy == corev1.RestartPolicyNever && strings.Contains(pc.where, "Job/") {
			byBinary[pc.binary] = pc
		}
	}
	// The setup Job creates the layout the workers only verify.
	if setup == nil {
		t.Fatal("no container runs worker setup")
	}
	runSetupJob(t, bins, *setup, ns, srv.ClientURL())
	for _, name := range []string{"shoptools", "worker"} {
		t.Run(name, func(t *testing.T) {
			pc := byBinary[name]
			addr := freeAddr(t)
			var stderr bytes.Buffer
			cmd := exec.Command(filepath.Join(bins.dir, name), pc.c.Args...)
			cmd.Env = processEnv(t, pc, ns, map[string]string{
				"PTC_NATS_URL": srv.ClientURL(), "PTC_REPLICAS": "1", "PTC_HEALTH_ADDR": addr,
			})
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			exited := false
			defer func() {
				if !exited {
					_ = cmd.Process.Kill()
					<-done
				}
			}()
			if err := waitStatus("http://"+addr+"/readyz", http.StatusOK, 20*time.Second, done); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			if err := waitStatus("http://"+addr+"/healthz", http.StatusOK, time.Second, done); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			// What Prometheus scrapes, at the path the pod annotations name.
			if body := webtest.Get(t, "http://"+addr+pc.pod.Annotations["prometheus.io/path"]); !strings.Contains(body, "\nptc_worker_slots ") || !strings.Contains(body, "\ngo_goroutines ") {
				t.Errorf("%s%s does not serve the fleet's metrics:\n%.2000s", addr, pc.pod.Annotations["prometheus.io/path"], body)
			}
			grace := 30 * time.Second
			if g := pc.pod.Spec.TerminationGracePeriodSeconds; g != nil {
				grace = time.Duration(*g) * time.Second
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				exited = true
				if err != nil {
					t.Fatalf("exit: %v\n%s", err, stderr.String())
				}
			case <-time.After(grace):
				t.Fatalf("still running %s after SIGTERM (the kubelet would kill it)\n%s", grace, stderr.String())
			}
			if strings.Contains(stderr.String(), `"level":"error"`) {
				t.Errorf("errors logged:\n%s", stderr.String())
			}
		})
	}
	t.Run("dispatcher", func(t *testing.T) {
		pc := byBinary["dispatcher"]
		dir := t.TempDir()
		args := append([]string(nil), pc.c.Args...)
		for i, a := range args {
			if strings.HasPrefix(a, "/missions/") {
				for _, m := range ms {
					if cm, ok := m.obj.(*corev1.ConfigMap); ok && cm.Name == "ptc-example-missions" {
						p := filepath.Join(dir, path.Base(a))
						if err := os.WriteFile(p, []byte(cm.Data[path.Base(a)]), 0o600); err != nil {
							t.Fatal(err)
						}
						args[i] = p
					}
				}
			}
		}
		// Without -wait: no worker runs now, the mission stays queued.
		args = slicesDelete(args, "-wait")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bins.dir, "dispatcher"), args...)
		cmd.Env = processEnv(t, pc, ns, map[string]string{"PTC_NATS_URL": srv.ClientURL()})
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("dispatcher %v: %v\n%s", args, err, out)
		}
		if !strings.Contains(string(out), filepath.Join(dir, "top-customers.yaml")) {
			t.Fatalf("output %q does not report the submitted file", out)
		}
	})
}

func slicesDelete(l []string, s string) []string {
	out := l[:0]
	for _, x := range l {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

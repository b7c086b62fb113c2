package k8s_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/ptcfleet/ptc/internal/cli"
)

// TestPlaceholderPasswordsRefused: every password shipped in
// ptc-nats-users is a placeholder the binaries refuse (cli), and the NATS
// pods' check-secrets init container, given the same Secret keys as the
// server, fails on them and passes on real passwords.
func TestPlaceholderPasswordsRefused(t *testing.T) {
	ms := loadManifests(t)
	sec := find[*corev1.Secret](t, ms, "Secret", "ptc-nats-users")
	if len(sec.StringData) == 0 {
		t.Fatal("ptc-nats-users has no stringData")
	}
	for k, v := range sec.StringData {
		if !cli.IsPlaceholderSecret(v) {
			t.Errorf("shipped %s %q is not recognised as a placeholder", k, v)
		}
		if err := (cli.NATSOptions{User: "u", Password: v}).Validate(); err == nil || !strings.Contains(err.Error(), "placeholder") {
			t.Errorf("binaries accept the shipped %s: %v", k, err)
		}
	}
	sts := find[*appsv1.StatefulSet](t, ms, "StatefulSet", "ptc-nats")
	var check *corev1.Container
	for i, c := range sts.Spec.Template.Spec.InitContainers {
		if c.Name == "check-secrets" {
			check = &sts.Spec.Template.Spec.InitContainers[i]
		}
	}
	if check == nil {
		t.Fatal("no check-secrets init container")
	}
	secretEnv := func(c corev1.Container) map[string]corev1.SecretKeySelector {
		out := map[string]corev1.SecretKeySelector{}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				out[e.Name] = *e.ValueFrom.SecretKeyRef
			}
		}
		return out
	}
	checked := secretEnv(*check)
	if server := secretEnv(sts.Spec.Template.Spec.Containers[0]); !reflect.DeepEqual(checked, server) {
		t.Errorf("check-secrets reads %v, the server %v", checked, server)
	}
	run := func(value func(key string) string) (string, error) {
		cmd := exec.Command(check.Command[0], append(append([]string{}, check.Command[1:]...), check.Args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		for name, ref := range checked {
			cmd.Env = append(cmd.Env, name+"="+value(ref.Key))
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		return stderr.String(), err
	}
	if out, err := run(func(key string) string { return sec.StringData[key] }); err == nil || !strings.Contains(out, "placeholder") {
		t.Errorf("check-secrets with the shipped Secret: %v %q, want a refusal", err, out)
	}
	for key := range sec.StringData {
		out, err := run(func(k string) string {
			if k == key {
				return sec.StringData[k]
			}
			return "s3cr3t-" + k
		})
		if err == nil {
			t.Errorf("check-secrets accepts a placeholder %s (%q)", key, out)
		}
	}
	if out, err := run(func(key string) string { return "s3cr3t-" + key }); err != nil {
		t.Errorf("check-secrets with real passwords: %v %q", err, out)
	}
	// The Helm values run the same init container.
	data, err := os.ReadFile(filepath.Join("helm", "nats-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		PodTemplate struct {
			Merge struct {
				Spec struct {
					InitContainers []corev1.Container `json:"initContainers"`
				} `json:"spec"`
			} `json:"merge"`
		} `json:"podTemplate"`
	}
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if ics := v.PodTemplate.Merge.Spec.InitContainers; len(ics) != 1 || !reflect.DeepEqual(ics[0], *check) {
		t.Errorf("helm podTemplate.merge.spec.initContainers %+v differ from the StatefulSet's check-secrets", ics)
	}
}

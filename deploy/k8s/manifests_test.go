package k8s_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// ourImage is the repository of the image the Dockerfile builds.
const ourImage = "ghcr.io/ptcfleet/ptc"

// manifest is one YAML document of a manifest file, decoded strictly into
// the Go type of its kind.
type manifest struct {
	path       string // relative to deploy/k8s
	apiVersion string
	kind       string
	name       string
	obj        any
}

func (m manifest) String() string { return fmt.Sprintf("%s: %s/%s", m.path, m.kind, m.name) }

// kinds maps each kind the deployment uses to its apiVersion and a
// constructor of the type it must decode into.
var kinds = map[string]struct {
	apiVersion string
	new        func() any
}{
	"Namespace":               {"v1", func() any { return new(corev1.Namespace) }},
	"ServiceAccount":          {"v1", func() any { return new(corev1.ServiceAccount) }},
	"ConfigMap":               {"v1", func() any { return new(corev1.ConfigMap) }},
	"Secret":                  {"v1", func() any { return new(corev1.Secret) }},
	"Service":                 {"v1", func() any { return new(corev1.Service) }},
	"Deployment":              {"apps/v1", func() any { return new(appsv1.Deployment) }},
	"StatefulSet":             {"apps/v1", func() any { return new(appsv1.StatefulSet) }},
	"PodDisruptionBudget":     {"policy/v1", func() any { return new(policyv1.PodDisruptionBudget) }},
	"NetworkPolicy":           {"networking.k8s.io/v1", func() any { return new(networkingv1.NetworkPolicy) }},
	"Job":                     {"batch/v1", func() any { return new(batchv1.Job) }},
	"CronJob":                 {"batch/v1", func() any { return new(batchv1.CronJob) }},
	"HorizontalPodAutoscaler": {"autoscaling/v2", func() any { return new(autoscalingv2.HorizontalPodAutoscaler) }},
	"ScaledObject":            {"keda.sh/v1alpha1", func() any { return new(scaledObject) }},
	"PodMonitor":              {"monitoring.coreos.com/v1", func() any { return new(podMonitor) }},
}

// scaledObject is the part of KEDA's ScaledObject (keda.sh/v1alpha1) the
// deployment uses; unknown fields fail the strict decode.
type scaledObject struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   objectMetadata `json:"metadata"`
	Spec       struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion,omitempty"`
			Kind       string `json:"kind,omitempty"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicaCount *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount *int32 `json:"maxReplicaCount,omitempty"`
		PollingInterval *int32 `json:"pollingInterval,omitempty"`
		CooldownPeriod  *int32 `json:"cooldownPeriod,omitempty"`
		Advanced        *struct {
			ScalingModifiers *struct {
				Formula          string `json:"formula"`
				Target           string `json:"target"`
				ActivationTarget string `json:"activationTarget,omitempty"`
				MetricType       string `json:"metricType,omitempty"`
			} `json:"scalingModifiers,omitempty"`
			HorizontalPodAutoscalerConfig *struct {
				Name     string                                         `json:"name,omitempty"`
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
			} `json:"horizontalPodAutoscalerConfig,omitempty"`
			RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
		} `json:"advanced,omitempty"`
		Triggers []kedaTrigger `json:"triggers"`
	} `json:"spec"`
}

type objectMetadata struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type kedaTrigger struct {
	Type       string          `json:"type"`
	Name       string          `json:"name,omitempty"`
	MetricType string          `json:"metricType,omitempty"`
	Metadata   json.RawMessage `json:"metadata"`
}

// natsJetStreamTrigger is the metadata of KEDA's nats-jetstream scaler.
type natsJetStreamTrigger struct {
	NatsServerMonitoringEndpoint string `json:"natsServerMonitoringEndpoint"`
	Account                      string `json:"account"`
	Stream                       string `json:"stream"`
	Consumer                     string `json:"consumer"`
	LagThreshold                 string `json:"lagThreshold"`
	ActivationLagThreshold       string `json:"activationLagThreshold,omitempty"`
	UseHTTPS                     string `json:"useHttps,omitempty"`
}

// jetStreamTrigger strict-decodes a nats-jetstream trigger's metadata and
// checks that its required fields are set.
func jetStreamTrigger(tr kedaTrigger) (natsJetStreamTrigger, error) {
	var md natsJetStreamTrigger
	if tr.Type != "nats-jetstream" {
		return md, fmt.Errorf("trigger %q: type %q, want nats-jetstream", tr.Name, tr.Type)
	}
	dec := json.NewDecoder(bytes.NewReader(tr.Metadata))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&md); err != nil {
		return md, fmt.Errorf("trigger %q: metadata: %w", tr.Name, err)
	}
	var missing []string
	for name, v := range map[string]string{
		"natsServerMonitoringEndpoint": md.NatsServerMonitoringEndpoint, "account": md.Account,
		"stream": md.Stream, "consumer": md.Consumer, "lagThreshold": md.LagThreshold,
	} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return md, fmt.Errorf("trigger %q: missing %s", tr.Name, strings.Join(missing, ", "))
	}
	return md, nil
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeDocuments splits a manifest file on "---" lines and decodes every
// non-empty document strictly into the type of its kind.
func decodeDocuments(path string, data []byte) ([]manifest, error) {
	var out []manifest
	for i, doc := range docSep.Split(string(data), -1) {
		m, err := decodeManifest(path, []byte(doc))
		if errors.Is(err, errEmptyDocument) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no manifest", path)
	}
	return out, nil
}

var errEmptyDocument = errors.New("empty document")

// strictDecode decodes a YAML document into obj, failing on duplicate
// keys, unknown fields (named by their path, e.g. "spec.replica") and
// wrong types.
func strictDecode(doc []byte, obj any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

func decodeManifest(path string, doc []byte) (manifest, error) {
	var head struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   objectMetadata `json:"metadata"`
	}
	var probe any
	if err := yaml.Unmarshal(doc, &probe); err != nil {
		return manifest{}, err
	}
	if probe == nil {
		return manifest{}, errEmptyDocument
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return manifest{}, err
	}
	k, ok := kinds[head.Kind]
	if !ok {
		return manifest{}, fmt.Errorf("unknown kind %q", head.Kind)
	}
	if head.APIVersion != k.apiVersion {
		return manifest{}, fmt.Errorf("%s: apiVersion %q, want %q", head.Kind, head.APIVersion, k.apiVersion)
	}
	if head.Metadata.Name == "" {
		return manifest{}, fmt.Errorf("%s: no metadata.name", head.Kind)
	}
	obj := k.new()
	if err := strictDecode(doc, obj); err != nil {
		return manifest{}, fmt.Errorf("%s %s: %w", head.Kind, head.Metadata.Name, err)
	}
	if so, ok := obj.(*scaledObject); ok {
		for _, tr := range so.Spec.Triggers {
			if _, err := jetStreamTrigger(tr); err != nil {
				return manifest{}, fmt.Errorf("ScaledObject %s: %w", head.Metadata.Name, err)
			}
		}
		if len(so.Spec.Triggers) == 0 {
			return manifest{}, fmt.Errorf("ScaledObject %s: no triggers", head.Metadata.Name)
		}
	}
	return manifest{path: path, apiVersion: head.APIVersion, kind: head.Kind, name: head.Metadata.Name, obj: obj}, nil
}

// isManifestPath reports whether a path under deploy/k8s is a Kubernetes
// manifest (helm/ holds Helm values, kustomization.yaml is kustomize's).
func isManifestPath(rel string) bool {
	return strings.HasSuffix(rel, ".yaml") && filepath.Base(rel) != "kustomization.yaml" &&
		!strings.HasPrefix(rel, "helm"+string(filepath.Separator))
}

// loadManifests reads every manifest under deploy/k8s.
func loadManifests(t *testing.T) []manifest {
	t.Helper()
	var out []manifest
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isManifestPath(path) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		ms, err := decodeDocuments(path, data)
		if err != nil {
			return err
		}
		out = append(out, ms...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func find[T any](t *testing.T, ms []manifest, kind, name string) T {
	t.Helper()
	for _, m := range ms {
		if m.kind == kind && m.name == name {
			return m.obj.(T)
		}
	}
	t.Fatalf("no %s %s in the manifests", kind, name)
	var zero T
	return zero
}

func TestManifestsDecodeStrictly(t *testing.T) {
	ms := loadManifests(t)
	seen := map[string]string{}
	count := map[string]int{}
	for _, m := range ms {
		key := m.kind + "/" + m.name
		if prev, dup := seen[key]; dup {
			t.Errorf("%s defined twice: %s and %s", key, prev, m.path)
		}
		seen[key] = m.path
		count[m.kind]++
	}
	// The deployment the issue asks for.
	for kind, min := range map[string]int{
		"StatefulSet": 1, "Deployment": 2, "Service": 2, "ConfigMap": 2, "Secret": 2,
		"PodDisruptionBudget": 3, "NetworkPolicy": 4, "ServiceAccount": 2, "Job": 2, "CronJob": 1,
		"ScaledObject": 1, "HorizontalPodAutoscaler": 1, "Namespace": 1, "PodMonitor": 1,
	} {
		if count[kind] < min {
			t.Errorf("%d %s manifests, want at least %d", count[kind], kind, min)
		}
	}
	t.Logf("%d manifests in %d kinds", len(ms), len(count))
}

func TestDecodeRejectsBadManifests(t *testing.T) {
	tests := []struct {
		name, doc, wantErr string
	}{
		{"misspelled field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 3}\n", `unknown field "spec.replica"`},
		{"misspelled nested field", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports: [{prot: 80}]\n", `unknown field "spec.ports[0].prot"`},
		{"duplicate field", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\ndata: {c: d}\n", `key "data" already set`},
		{"wrong type", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: many}\n", `replicas`},
		{"unknown kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", `unknown kind "Pod"`},
		{"old apiVersion", "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: x}\n", `want "policy/v1"`},
		{"no name", "apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n", `no metadata.name`},
		{"scaledobject misspelled", "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec:\n  scaleTargetRef: {name: w}\n  maxReplicas: 3\n  triggers: []\n", `unknown field "spec.maxReplicas"`},
		{"trigger field misspelled", "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec:\n  scaleTargetRef: {name: w}\n  triggers:\n  - type: nats-jetstream\n    metadata: {natsServerMonitoringEndpoint: n:8222, account: $G, stream: S, consumer: c, lagTreshold: \"4\"}\n", `unknown field "lagTreshold"`},
		{"trigger field missing", "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec:\n  scaleTargetRef: {name: w}\n  triggers:\n  - type: nats-jetstream\n    metadata: {natsServerMonitoringEndpoint: n:8222, account: $G, stream: S, lagThreshold: \"4\"}\n", `missing consumer`},
		{"trigger type", "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec:\n  scaleTargetRef: {name: w}\n  triggers:\n  - type: cpu\n    metadata: {value: \"50\"}\n", `want nats-jetstream`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeDocuments("test.yaml", []byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	// Multi-document files: every document is checked, empty ones skipped.
	ms, err := decodeDocuments("two.yaml", []byte("# c\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"))
	if err != nil || len(ms) != 2 || ms[1].name != "b" {
		t.Fatalf("got %v, %v; want configmaps a and b", ms, err)
	}
	if _, err := decodeDocuments("two.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndatas: {}\n")); err == nil || !strings.Contains(err.Error(), "document 2") {
		t.Fatalf("err = %v, want one naming document 2", err)
	}
}

// kustomization is the part of kustomize's Kustomization the deployment
// uses.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace,omitempty"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images,omitempty"`
	Patches []struct {
		Patch string `json:"patch,omitempty"`
		Path  string `json:"path,omitempty"`
	} `json:"patches,omitempty"`
}

func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := strictDecode(data, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("%s/kustomization.yaml: %s %s", dir, k.APIVersion, k.Kind)
	}
	return k
}

// TestKustomizations checks that each directory's kustomization lists
// exactly its manifest files (and subdirectories that are kustomizations),
// that every referenced path exists, and that the root reaches NATS and the
// fleet.
func TestKustomizations(t *testing.T) {
	ms := loadManifests(t)
	dirs := map[string]bool{}
	for _, m := range ms {
		dirs[filepath.Dir(m.path)] = true
	}
	for dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			k := readKustomization(t, dir)
			listed := map[string]bool{}
			for _, r := range k.Resources {
				if listed[r] {
					t.Errorf("%s listed twice", r)
				}
				listed[r] = true
				p := filepath.Join(dir, r)
				st, err := os.Stat(p)
				switch {
				case err != nil:
					t.Errorf("resource %s: %v", r, err)
				case st.IsDir():
					if _, err := os.Stat(filepath.Join(p, "kustomization.yaml")); err != nil {
						t.Errorf("resource %s is a directory without kustomization.yaml", r)
					}
				case !isManifestPath(filepath.Clean(p)):
					t.Errorf("resource %s is not a manifest file", r)
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if !e.IsDir() && isManifestPath(filepath.Join(dir, e.Name())) && !listed[e.Name()] {
					t.Errorf("%s is not listed in %s/kustomization.yaml", e.Name(), dir)
				}
			}
			for _, img := range k.Images {
				if img.Name != ourImage {
					t.Errorf("images: %q is not the fleet's image %q", img.Name, ourImage)
				}
			}
			// Patches must target objects that exist.
			for _, p := range k.Patches {
				var head struct {
					Kind     string         `json:"kind"`
					Metadata objectMetadata `json:"metadata"`
				}
				if err := yaml.Unmarshal([]byte(p.Patch), &head); err != nil {
					t.Fatalf("patch: %v", err)
				}
				found := false
				for _, m := range ms {
					found = found || (m.kind == head.Kind && m.name == head.Metadata.Name)
				}
				if !found {
					t.Errorf("patch targets %s/%s, which no manifest defines", head.Kind, head.Metadata.Name)
				}
			}
		})
	}
	root := readKustomization(t, ".")
	for _, want := range []string{"nats", "fleet", "namespace"} {
		if !slices.Contains(root.Resources, want) {
			t.Errorf("root kustomization does not include %s", want)
		}
	}
	ns := find[*corev1.Namespace](t, ms, "Namespace", root.Namespace)
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace %s: pod security %q, want restricted", ns.Name, ns.Labels["pod-security.kubernetes.io/enforce"])
	}
	// The no-KEDA overlay cannot include the root (kustomize refuses a
	// directory that contains the overlay), so it repeats the root's parts.
	ov := readKustomization(t, filepath.Join("overlays", "no-keda"))
	var want []string
	for _, r := range root.Resources {
		want = append(want, "../../"+r)
	}
	if got := slices.DeleteFunc(slices.Clone(ov.Resources), func(r string) bool { return !strings.HasPrefix(r, "../") }); !slices.Equal(got, want) {
		t.Errorf("overlays/no-keda includes %v, the root %v", got, want)
	}
	if ov.Namespace != root.Namespace || !reflect.DeepEqual(ov.Images, root.Images) {
		t.Errorf("overlays/no-keda namespace %q images %v; root %q %v", ov.Namespace, ov.Images, root.Namespace, root.Images)
	}
	if ex := readKustomization(t, "examples"); ex.Namespace != root.Namespace {
		t.Errorf("examples namespace %q, root %q", ex.Namespace, root.Namespace)
	}
}

// podTemplates returns the pod templates of the workload manifests.
func podTemplates(ms []manifest) map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for _, m := range ms {
		switch o := m.obj.(type) {
		case *appsv1.Deployment:
			out[m.String()] = &o.Spec.Template
		case *appsv1.StatefulSet:
			out[m.String()] = &o.Spec.Template
		case *batchv1.Job:
			out[m.String()] = &o.Spec.Template
		case *batchv1.CronJob:
			out[m.String()] = &o.Spec.JobTemplate.Spec.Template
		}
	}
	return out
}

// TestPodsAreLockedDown: every container has resource requests and a memory
// limit, and runs non-root with a read-only root filesystem, no privilege
// escalation and no capabilities; service account tokens are not mounted.
func TestPodsAreLockedDown(t *testing.T) {
	pods := podTemplates(loadManifests(t))
	if len(pods) < 5 {
		t.Fatalf("%d pod templates, want at least 5", len(pods))
	}
	for name, pod := range pods {
		t.Run(name, func(t *testing.T) {
			ps := pod.Spec
			if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
				t.Error("automountServiceAccountToken is not false")
			}
			if ps.SecurityContext == nil || ps.SecurityContext.SeccompProfile == nil ||
				ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Error("no RuntimeDefault seccomp profile")
			}
			for _, c := range append(slices.Clone(ps.InitContainers), ps.Containers...) {
				for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					if q, ok := c.Resources.Requests[res]; !ok || q.IsZero() {
						t.Errorf("container %s: no %s request", c.Name, res)
					}
				}
				if q, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || q.IsZero() {
					t.Errorf("container %s: no memory limit", c.Name)
				} else if r := c.Resources.Requests[corev1.ResourceMemory]; r.Cmp(q) > 0 {
					t.Errorf("container %s: memory request %s above limit %s", c.Name, r.String(), q.String())
				}
				nonRoot := ps.SecurityContext != nil && ps.SecurityContext.RunAsNonRoot != nil && *ps.SecurityContext.RunAsNonRoot
				uid := int64(-1)
				if ps.SecurityContext != nil && ps.SecurityContext.RunAsUser != nil {
					uid = *ps.SecurityContext.RunAsUser
				}
				sc := c.SecurityContext
				if sc == nil {
					t.Errorf("container %s: no securityContext", c.Name)
					continue
				}
				if sc.RunAsNonRoot != nil {
					nonRoot = *sc.RunAsNonRoot
				}
				if sc.RunAsUser != nil {
					uid = *sc.RunAsUser
				}
				if !nonRoot || uid == 0 {
					t.Errorf("container %s: not runAsNonRoot (uid %d)", c.Name, uid)
				}
				if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
					t.Errorf("container %s: root filesystem not read-only", c.Name)
				}
				if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
					t.Errorf("container %s: allowPrivilegeEscalation not false", c.Name)
				}
				if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
					t.Errorf("container %s: capabilities not dropped", c.Name)
				}
			}
		})
	}
}

// TestReferencesResolve: every Secret, ConfigMap, ServiceAccount and PVC a
// pod uses exists in the manifests with the keys it reads (unless marked
// optional), and every PDB, Service and NetworkPolicy selects some pods.
func TestReferencesResolve(t *testing.T) {
	ms := loadManifests(t)
	secrets, configMaps := map[string]map[string]bool{}, map[string]map[string]bool{}
	accounts := map[string]bool{}
	var podLabels []map[string]string
	for _, m := range ms {
		switch o := m.obj.(type) {
		case *corev1.Secret:
			keys := map[string]bool{}
			for k := range o.StringData {
				keys[k] = true
			}
			for k := range o.Data {
				keys[k] = true
			}
			secrets[o.Name] = keys
		case *corev1.ConfigMap:
			keys := map[string]bool{}
			for k := range o.Data {
				keys[k] = true
			}
			configMaps[o.Name] = keys
		case *corev1.ServiceAccount:
			accounts[o.Name] = true
		}
	}
	for name, pod := range podTemplates(ms) {
		podLabels = append(podLabels, pod.Labels)
		if sa := pod.Spec.ServiceAccountName; sa != "" && !accounts[sa] {
			t.Errorf("%s: service account %s not defined", name, sa)
		}
		for _, v := range pod.Spec.Volumes {
			if v.ConfigMap != nil && configMaps[v.ConfigMap.Name] == nil {
				t.Errorf("%s: volume %s: configmap %s not defined", name, v.Name, v.ConfigMap.Name)
			}
			if v.Secret != nil && secrets[v.Secret.SecretName] == nil {
				t.Errorf("%s: volume %s: secret %s not defined", name, v.Name, v.Secret.SecretName)
			}
		}
		for _, c := range pod.Spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil && !(r.Optional != nil && *r.Optional) && !secrets[r.Name][r.Key] {
					t.Errorf("%s: %s: secret %s has no key %s", name, e.Name, r.Name, r.Key)
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil && !(r.Optional != nil && *r.Optional) && !configMaps[r.Name][r.Key] {
					t.Errorf("%s: %s: configmap %s has no key %s", name, e.Name, r.Name, r.Key)
				}
			}
			for _, ef := range c.EnvFrom {
				if r := ef.ConfigMapRef; r != nil && configMaps[r.Name] == nil {
					t.Errorf("%s: envFrom configmap %s not defined", name, r.Name)
				}
				if r := ef.SecretRef; r != nil && secrets[r.Name] == nil {
					t.Errorf("%s: envFrom secret %s not defined", name, r.Name)
				}
			}
		}
	}
	selects := func(sel map[string]string) bool {
		for _, l := range podLabels {
			ok := true
			for k, v := range sel {
				ok = ok && l[k] == v
			}
			if ok {
				return true
			}
		}
		return false
	}
	for _, m := range ms {
		var sel map[string]string
		switch o := m.obj.(type) {
		case *policyv1.PodDisruptionBudget:
			sel = o.Spec.Selector.MatchLabels
		case *corev1.Service:
			sel = o.Spec.Selector
		case *networkingv1.NetworkPolicy:
			sel = o.Spec.PodSelector.MatchLabels
		case *appsv1.Deployment:
			sel = o.Spec.Selector.MatchLabels
			if !labelsMatch(sel, o.Spec.Template.Labels) {
				t.Errorf("%s: selector does not match its pod template", m)
			}
		case *appsv1.StatefulSet:
			sel = o.Spec.Selector.MatchLabels
			if !labelsMatch(sel, o.Spec.Template.Labels) {
				t.Errorf("%s: selector does not match its pod template", m)
			}
		default:
			continue
		}
		if len(sel) == 0 || !selects(sel) {
			t.Errorf("%s: selector %v selects no pod template", m, sel)
		}
	}
}

func labelsMatch(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

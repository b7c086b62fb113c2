package k8s_test

import (
	"encoding/json"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ptcfleet/ptc/pkg/fleet"
)

// podMonitor is the part of the Prometheus Operator's PodMonitor
// (monitoring.coreos.com/v1) the deployment uses; unknown fields fail the
// strict decode.
type podMonitor struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   objectMetadata `json:"metadata"`
	Spec       struct {
		Selector            metav1.LabelSelector `json:"selector"`
		PodMetricsEndpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval,omitempty"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// TestFleetPodsAreScraped: the PodMonitor selects the worker and tool
// service pods and scrapes /metrics on a port their container declares,
// and their pod annotations (for annotation-based discovery) name the same
// port and path.
func TestFleetPodsAreScraped(t *testing.T) {
	ms := loadManifests(t)
	pm := find[*podMonitor](t, ms, "PodMonitor", "ptc-fleet")
	sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 {
		t.Fatalf("podMetricsEndpoints = %+v, want one", pm.Spec.PodMetricsEndpoints)
	}
	ep := pm.Spec.PodMetricsEndpoints[0]
	if ep.Path != "/metrics" {
		t.Errorf("path %q, want /metrics", ep.Path)
	}
	var scraped []string
	for name, pod := range podTemplates(ms) {
		if !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		scraped = append(scraped, pod.Labels["app.kubernetes.io/name"])
		port := containerPort(pod, ep.Port)
		if port == 0 {
			t.Errorf("%s: no container port named %q", name, ep.Port)
		}
		a := pod.Annotations
		if a["prometheus.io/scrape"] != "true" || a["prometheus.io/path"] != ep.Path || a["prometheus.io/port"] != strconv.Itoa(int(port)) {
			t.Errorf("%s: annotations %v, want scrape true, path %s, port %d", name, a, ep.Path, port)
		}
	}
	sort.Strings(scraped)
	if !slices.Equal(scraped, []string{"ptc-shoptools", "ptc-worker"}) {
		t.Errorf("PodMonitor selects %v, want the worker and shoptools pods", scraped)
	}
}

func containerPort(pod *corev1.PodTemplateSpec, name string) int32 {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return p.ContainerPort
			}
		}
	}
	return 0
}

// fleetMetricNames returns the names of the metrics fleet.Metrics
// registers.
func fleetMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	if _, err := fleet.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 100)
	go func() {
		// A registry is a Collector of everything registered.
		reg.Describe(ch)
		close(ch)
	}()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read a metric name from %s", d)
		}
		names[m[1]] = true
	}
	if len(names) < 20 {
		t.Fatalf("only %d fleet metrics: %v", len(names), names)
	}
	return names
}

// TestGrafanaDashboard: the dashboard is valid JSON in Grafana's model,
// every query names only metrics the fleet exports, and every metric the
// fleet exports is on it.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile("../grafana/ptc-fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Panels        []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			GridPos struct {
				H, W, X, Y int
			} `json:"gridPos"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&dash); err != nil {
		t.Fatal(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatal("trailing data after the dashboard")
	}
	if dash.UID == "" || dash.Title == "" || dash.SchemaVersion < 30 || len(dash.Panels) == 0 {
		t.Fatalf("dashboard uid %q title %q schema %d panels %d", dash.UID, dash.Title, dash.SchemaVersion, len(dash.Panels))
	}
	exported := fleetMetricNames(t)
	used := map[string]bool{}
	name := regexp.MustCompile(`\bptc_[a-z0-9_]+`)
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W < 1 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.Count(tg.Expr, "(") != strings.Count(tg.Expr, ")") {
				t.Errorf("panel %q: unbalanced query %s", p.Title, tg.Expr)
			}
			for _, n := range name.FindAllString(tg.Expr, -1) {
				base := n
				if strings.Contains(tg.Expr, n+"{") && !exported[n] {
					for _, suf := range []string{"_bucket", "_sum", "_count"} {
						base = strings.TrimSuffix(base, suf)
					}
				}
				if !exported[base] {
					t.Errorf("panel %q queries %s, which the fleet does not export", p.Title, n)
				}
				used[base] = true
			}
		}
	}
	for n := range exported {
		if !used[n] {
			t.Errorf("the dashboard does not show %s", n)
		}
	}
}

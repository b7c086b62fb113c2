package k8s_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ptcfleet/ptc/deploy/k8s/natsauth"
	"github.com/ptcfleet/ptc/internal/missionfile"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmconfig"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// binaryFlags is what a binary's -h output says about its flags: each
// flag's environment twin and its default.
type binaryFlags map[string]string // env name → default ("" when none)

var usageLine = regexp.MustCompile(`(?m)^  -(\S+)  \[(PTC_[A-Z0-9_]+)\]\n {6}(.*)$`)
var usageDefault = regexp.MustCompile(`\(default (.*)\)$`)

// parseUsage reads the env twins and defaults from cli.Usage output.
func parseUsage(out string) (binaryFlags, error) {
	flags := binaryFlags{}
	for _, m := range usageLine.FindAllStringSubmatch(out, -1) {
		def := ""
		if d := usageDefault.FindStringSubmatch(m[3]); d != nil {
			def = d[1]
		}
		flags[m[2]] = def
	}
	if len(flags) == 0 {
		return nil, fmt.Errorf("no [PTC_...] flags in usage output:\n%s", out)
	}
	return flags, nil
}

// binaries are cmd/worker, cmd/dispatcher and cmd/shoptools built into a
// temporary directory, with the usage of "worker", "shoptools" and
// "dispatcher <command>" read from their -h output as tests ask for it.
type binaries struct {
	dir   string
	mu    sync.Mutex
	usage map[string]binaryFlags
}

// built holds the binaries of this test run: they are built once, by the
// first test that needs them, and removed by TestMain.
var built struct {
	once sync.Once
	b    *binaries
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.b != nil {
		os.RemoveAll(built.b.dir)
	}
	os.Exit(code)
}

func buildBinaries(t *testing.T) *binaries {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "ptc-k8s-test-")
		if err != nil {
			built.err = err
			return
		}
		built.b = &binaries{dir: dir, usage: map[string]binaryFlags{}}
		cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", dir+string(filepath.Separator), "./cmd/worker", "./cmd/dispatcher", "./cmd/shoptools", "./cmd/mcpbridge")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.b
}

// flags returns the flags of the binary (and dispatcher command) a
// container runs, from its -h output.
func (b *binaries) flags(t *testing.T, name string, args []string) binaryFlags {
	t.Helper()
	argv := []string{"-h"}
	key := name
	if name == "dispatcher" {
		if len(args) == 0 {
			t.Fatalf("dispatcher without a command")
		}
		argv = []string{args[0], "-h"}
		key = name + " " + args[0]
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if f, ok := b.usage[key]; ok {
		return f
	}
	out, _ := exec.Command(filepath.Join(b.dir, name), argv...).CombinedOutput() // -h exits 1
	f, err := parseUsage(string(out))
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	b.usage[key] = f
	return f
}

// runtimeEnv are variables the Go runtime reads in every binary.
var runtimeEnv = []string{"GOMEMLIMIT", "GOMAXPROCS", "GOGC", "GODEBUG"}

// providerKeys are the key variables of llmconfig's provider presets.
var providerKeys = []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"}

// ptcContainer is a container that runs one of this repository's
// binaries, with the environment the manifests give it.
type ptcContainer struct {
	where  string // manifest and container
	binary string
	pod    *corev1.PodTemplateSpec
	c      *corev1.Container
	env    map[string]string // literal values; "" for valueFrom
}

func ptcContainers(t *testing.T, ms []manifest) []ptcContainer {
	t.Helper()
	cms := map[string]map[string]string{}
	secrets := map[string]map[string]string{}
	for _, m := range ms {
		switch o := m.obj.(type) {
		case *corev1.ConfigMap:
			cms[o.Name] = o.Data
		case *corev1.Secret:
			secrets[o.Name] = o.StringData
		}
	}
	var out []ptcContainer
	for name, pod := range podTemplates(ms) {
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if !strings.HasPrefix(c.Image, ourImage+":") && !strings.HasPrefix(c.Image, ourImage+"@") {
				continue
			}
			if len(c.Command) != 1 || path.Dir(c.Command[0]) != "/usr/local/bin" {
				t.Errorf("%s: container %s: command %q, want [/usr/local/bin/<binary>]", name, c.Name, c.Command)
				continue
			}
			pc := ptcContainer{where: name + " container " + c.Name, binary: path.Base(c.Command[0]), pod: pod, c: c, env: map[string]string{}}
			for _, ef := range c.EnvFrom {
				var src map[string]string
				switch {
				case ef.ConfigMapRef != nil:
					src = cms[ef.ConfigMapRef.Name]
				case ef.SecretRef != nil:
					src = secrets[ef.SecretRef.Name]
				}
				for k, v := range src {
					pc.env[ef.Prefix+k] = v
				}
			}
			for _, e := range c.Env {
				if _, dup := pc.env[e.Name]; dup {
					t.Errorf("%s: %s set twice", pc.where, e.Name)
				}
				pc.env[e.Name] = e.Value
			}
			out = append(out, pc)
		}
	}
	if len(out) < 4 {
		t.Fatalf("%d containers run %s, want worker, shoptools and dispatchers", len(out), ourImage)
	}
	return out
}

// value is the setting of a flag in a container: its env value or the
// binary's default.
func (pc ptcContainer) value(f binaryFlags, env string) string {
	if v, ok := pc.env[env]; ok {
		return v
	}
	return f[env]
}

// TestContainersMatchBinaries builds the binaries and checks every
// container that runs one: the environment variables it sets are read by
// that binary (its flags' twins from -h, the worker's model and key
// variables, the Go runtime's), model specs parse, health probes point at
// the binary's health port, and workers get more termination grace than
// their drain budget.
func TestContainersMatchBinaries(t *testing.T) {
	ms := loadManifests(t)
	bins := buildBinaries(t)
	built := map[string]bool{}
	for _, b := range []string{"worker", "dispatcher", "shoptools", "mcpbridge"} {
		built[b] = true
	}
	seen := map[string]bool{}
	for _, pc := range ptcContainers(t, ms) {
		t.Run(pc.where, func(t *testing.T) {
			if !built[pc.binary] {
				t.Fatalf("runs %s, which the image does not hold", pc.binary)
			}
			seen[pc.binary] = true
			flags := bins.flags(t, pc.binary, pc.c.Args)
			allowed := func(name string) bool {
				if _, ok := flags[name]; ok || slices.Contains(runtimeEnv, name) {
					return true
				}
				if pc.binary != "worker" {
					return false
				}
				if slices.Contains(providerKeys, name) {
					return true
				}
				if strings.HasPrefix(name, llmconfig.EnvPrefix) && len(name) > len(llmconfig.EnvPrefix) {
					return true
				}
				// key_env=VAR in a model spec names a key variable.
				for k, v := range pc.env {
					if strings.HasPrefix(k, llmconfig.EnvPrefix) {
						if s, err := llmconfig.Parse(v); err == nil && s.KeyEnv == name {
							return true
						}
					}
				}
				return false
			}
			for name := range pc.env {
				if !allowed(name) {
					t.Errorf("sets %s, which %s does not read", name, pc.binary)
				}
			}
			// Model specs must parse (Parse reads no keys).
			models := 0
			for k, v := range pc.env {
				if strings.HasPrefix(k, llmconfig.EnvPrefix) {
					models++
					if _, err := llmconfig.Parse(v); err != nil {
						t.Errorf("%s: %v", k, err)
					}
				}
			}
			if pc.binary == "worker" && !pc.isSetup() {
				if models == 0 {
					t.Error("worker has no PTC_MODEL_<NAME> model")
				}
				def := strings.ToUpper(pc.value(flags, "PTC_FALLBACK_MODEL_NAME"))
				if _, ok := pc.env[llmconfig.EnvPrefix+def]; !ok {
					t.Errorf("default model %q has no %s%s", def, llmconfig.EnvPrefix, def)
				}
			}
			// Durations must parse as the flag package parses them.
			for name, def := range flags {
				if _, err := time.ParseDuration(def); err != nil || def == "" {
					continue
				}
				if v, ok := pc.env[name]; ok && v != "" {
					if _, err := time.ParseDuration(v); err != nil {
						t.Errorf("%s=%q: %v", name, v, err)
					}
				}
			}
			if url, ok := pc.env["PTC_NATS_URL"]; !ok || !strings.HasPrefix(url, "nats://") {
				t.Errorf("PTC_NATS_URL = %q: without it worker starts an embedded server and the others fail", url)
			}
			if !pc.isSetup() {
				checkHealth(t, pc, flags)
			}
			if pc.binary == "worker" && !pc.isSetup() {
				checkDrain(t, pc, flags)
			}
		})
	}
	for b := range built {
		if !seen[b] {
			t.Errorf("no manifest runs %s", b)
		}
	}
}

// isSetup reports whether the container runs `worker setup` (a Job that
// exits) rather than a long-running binary.
func (pc ptcContainer) isSetup() bool {
	return pc.binary == "worker" && len(pc.c.Args) > 0 && pc.c.Args[0] == "setup"
}

// checkHealth: a binary with a health endpoint has readiness on /readyz
// and liveness on /healthz at that port.
func checkHealth(t *testing.T, pc ptcContainer, flags binaryFlags) {
	t.Helper()
	if _, has := flags["PTC_HEALTH_ADDR"]; !has {
		if pc.c.ReadinessProbe != nil || pc.c.LivenessProbe != nil {
			t.Errorf("%s has no health endpoint but the container has probes", pc.binary)
		}
		return
	}
	addr := pc.value(flags, "PTC_HEALTH_ADDR")
	_, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("PTC_HEALTH_ADDR %q: %v", addr, err)
	}
	port, _ := strconv.Atoi(portStr)
	probePort := func(p *corev1.Probe) int {
		if p == nil || p.HTTPGet == nil {
			return -1
		}
		if p.HTTPGet.Port.StrVal == "" {
			return int(p.HTTPGet.Port.IntVal)
		}
		for _, cp := range pc.c.Ports {
			if cp.Name == p.HTTPGet.Port.StrVal {
				return int(cp.ContainerPort)
			}
		}
		return -2
	}
	for _, pr := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{{"readiness", pc.c.ReadinessProbe, "/readyz"}, {"liveness", pc.c.LivenessProbe, "/healthz"}, {"startup", pc.c.StartupProbe, "/healthz"}} {
		if pr.probe == nil {
			if pr.kind != "startup" {
				t.Errorf("no %s probe", pr.kind)
			}
			continue
		}
		if pr.probe.HTTPGet == nil || pr.probe.HTTPGet.Path != pr.path {
			t.Errorf("%s probe does not GET %s", pr.kind, pr.path)
		}
		if got := probePort(pr.probe); got != port {
			t.Errorf("%s probe on port %d, health endpoint on %d (%s)", pr.kind, got, port, addr)
		}
	}
}

// drainMargin is the least time a worker gets between the end of its
// drain grace and SIGKILL: handing missions back and flushing NATS.
const drainMargin = 10 * time.Second

func checkDrain(t *testing.T, pc ptcContainer, flags binaryFlags) {
	t.Helper()
	grace, err := time.ParseDuration(pc.value(flags, "PTC_DRAIN_GRACE"))
	if err != nil {
		t.Fatalf("PTC_DRAIN_GRACE: %v", err)
	}
	tgps := pc.pod.Spec.TerminationGracePeriodSeconds
	if tgps == nil {
		t.Fatalf("no terminationGracePeriodSeconds (default 30s) for a drain grace of %s", grace)
	}
	if got := time.Duration(*tgps) * time.Second; got < grace+drainMargin {
		t.Errorf("terminationGracePeriodSeconds %s < drain grace %s + %s", got, grace, drainMargin)
	}
	if pc.c.Lifecycle != nil && pc.c.Lifecycle.PreStop != nil {
		t.Error("a preStop hook delays SIGTERM and eats into the drain grace")
	}
}

// TestScaledObjectMatchesWorkers: the KEDA triggers watch the MISSIONS
// consumers the workers pull from (every priority), on the NATS monitoring
// endpoint, with lagThreshold (and the formula's target) equal to the
// worker's mission slots; the setup Job's MaxAckPending admits the slots
// of maxReplicaCount workers.
func TestScaledObjectMatchesWorkers(t *testing.T) {
	ms := loadManifests(t)
	so := find[*scaledObject](t, ms, "ScaledObject", "ptc-worker")
	dep := find[*appsv1.Deployment](t, ms, "Deployment", so.Spec.ScaleTargetRef.Name)
	if dep.Spec.Replicas != nil {
		t.Errorf("Deployment %s sets replicas; the autoscaler owns them", dep.Name)
	}
	var slots, ackPending string
	for _, pc := range ptcContainers(t, ms) {
		if pc.pod == &dep.Spec.Template {
			slots = pc.env["PTC_SLOTS"]
		}
		if pc.isSetup() {
			ackPending = pc.env["PTC_MAX_ACK_PENDING"]
		}
	}
	n, err := strconv.Atoi(slots)
	if err != nil || n < 1 {
		t.Fatalf("worker PTC_SLOTS = %q: set it explicitly, KEDA's lagThreshold must equal it", slots)
	}
	// the consumers must admit every slot of the largest fleet
	if so.Spec.MaxReplicaCount == nil {
		t.Fatal("ScaledObject sets no maxReplicaCount")
	}
	if ap, err := strconv.Atoi(ackPending); err != nil || ap < int(*so.Spec.MaxReplicaCount)*n {
		t.Errorf("setup Job PTC_MAX_ACK_PENDING = %q, want at least maxReplicaCount %d × PTC_SLOTS %d",
			ackPending, *so.Spec.MaxReplicaCount, n)
	}
	root := readKustomization(t, ".")
	want := map[string]bool{}
	for _, p := range messages.Priorities() {
		want[fleet.ConsumerName(p)] = true
		for l := range messages.MissionLanes {
			want[fleet.LaneConsumerName(p, l)] = true
		}
	}
	var names []string
	for _, tr := range so.Spec.Triggers {
		md, err := jetStreamTrigger(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tr.Name)
		if md.Stream != messages.StreamMissions {
			t.Errorf("trigger %s: stream %q, want %q", tr.Name, md.Stream, messages.StreamMissions)
		}
		if !want[md.Consumer] {
			t.Errorf("trigger %s: consumer %q is not a missions consumer (or is watched twice)", tr.Name, md.Consumer)
		}
		delete(want, md.Consumer)
		if md.LagThreshold != slots {
			t.Errorf("trigger %s: lagThreshold %s, worker PTC_SLOTS %s", tr.Name, md.LagThreshold, slots)
		}
		if md.Account != natsauth.Shipped()[0].Name {
			t.Errorf("trigger %s: account %q; the fleet's users live in account %s", tr.Name, md.Account, natsauth.Shipped()[0].Name)
		}
		host, port, err := net.SplitHostPort(md.NatsServerMonitoringEndpoint)
		if err != nil || port != "8222" {
			t.Errorf("trigger %s: endpoint %q, want <headless service>.<namespace>.svc...:8222", tr.Name, md.NatsServerMonitoringEndpoint)
			continue
		}
		parts := strings.Split(host, ".")
		svc := find[*corev1.Service](t, ms, "Service", parts[0])
		if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("trigger %s: %s is not headless: KEDA reaches each server through it", tr.Name, svc.Name)
		}
		if len(parts) < 2 || parts[1] != root.Namespace {
			t.Errorf("trigger %s: endpoint namespace %v, kustomization namespace %q", tr.Name, parts, root.Namespace)
		}
	}
	for c := range want {
		t.Errorf("no trigger watches consumer %s", c)
	}
	adv := so.Spec.Advanced
	if adv == nil || adv.ScalingModifiers == nil {
		t.Fatal("no scalingModifiers: without them KEDA scales on the busiest priority, not the total lag")
	}
	if adv.ScalingModifiers.Target != slots {
		t.Errorf("scalingModifiers target %s, worker PTC_SLOTS %s", adv.ScalingModifiers.Target, slots)
	}
	for _, n := range names {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(n) + `\b`).MatchString(adv.ScalingModifiers.Formula) {
			t.Errorf("formula %q leaves out trigger %s", adv.ScalingModifiers.Formula, n)
		}
	}
	if so.Spec.MinReplicaCount == nil || so.Spec.MaxReplicaCount == nil || *so.Spec.MinReplicaCount > *so.Spec.MaxReplicaCount {
		t.Error("min/max replica counts unset or inverted")
	}
}

// TestDispatcherExamples: the dispatcher Jobs submit mission files that
// exist in the mounted ConfigMap and parse as missions.
func TestDispatcherExamples(t *testing.T) {
	ms := loadManifests(t)
	cms := map[string]*corev1.ConfigMap{}
	for _, m := range ms {
		if cm, ok := m.obj.(*corev1.ConfigMap); ok {
			cms[cm.Name] = cm
		}
	}
	n := 0
	for _, pc := range ptcContainers(t, ms) {
		if pc.binary != "dispatcher" {
			continue
		}
		n++
		mounts := map[string]*corev1.ConfigMap{}
		for _, vm := range pc.c.VolumeMounts {
			for _, v := range pc.pod.Spec.Volumes {
				if v.Name == vm.Name && v.ConfigMap != nil {
					mounts[vm.MountPath] = cms[v.ConfigMap.Name]
				}
			}
		}
		files := 0
		for _, a := range pc.c.Args[1:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			cm := mounts[path.Dir(a)]
			if cm == nil {
				t.Errorf("%s: %s is not on a mounted ConfigMap", pc.where, a)
				continue
			}
			data, ok := cm.Data[path.Base(a)]
			if !ok {
				t.Errorf("%s: ConfigMap %s has no %s", pc.where, cm.Name, path.Base(a))
				continue
			}
			f, err := missionfile.Parse([]byte(data))
			if err == nil {
				_, err = f.Build()
			}
			if err != nil {
				t.Errorf("%s: %s: %v", pc.where, a, err)
			}
			files++
		}
		if pc.c.Args[0] == "submit" && files == 0 {
			t.Errorf("%s: submit without a mission file", pc.where)
		}
	}
	if n < 2 {
		t.Errorf("%d dispatcher containers, want a Job and a CronJob", n)
	}
	// The example mission is examples/missions/top-customers.yaml without
	// its scripted replies.
	want, err := missionfile.Read(filepath.Join("..", "..", "examples", "missions", "top-customers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want.Script = nil
	got, err := missionfile.Parse([]byte(cms["ptc-example-missions"].Data["top-customers.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("examples/mission.yaml drifted from examples/missions/top-customers.yaml:\n got %+v\nwant %+v", got, want)
	}
}

// dockerfile is what the manifest tests need from the Dockerfile.
type dockerfile struct {
	binaries map[string]string // binary name → path in the final image
	uid      int64
}

var (
	fromLine   = regexp.MustCompile(`(?im)^FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?\s*$`)
	buildLine  = regexp.MustCompile(`go build\b[^\n]*`)
	cmdPackage = regexp.MustCompile(`\./cmd/([a-z0-9_-]+)`)
	copyFrom   = regexp.MustCompile(`(?m)^COPY\s+--from=(\S+)\s+(.+)\s+(\S+)\s*$`)
	userLine   = regexp.MustCompile(`(?m)^USER\s+(\S+)\s*$`)
)

// parseDockerfile checks the Dockerfile's shape: multi-stage, a build stage
// that builds static binaries of ./cmd/... with CGO off, a distroless
// static or scratch final stage that copies them from the build stage and
// runs as a numeric non-root user.
func parseDockerfile(text string) (dockerfile, error) {
	// Join continuation lines.
	text = strings.ReplaceAll(text, "\\\n", " ")
	df := dockerfile{binaries: map[string]string{}}
	froms := fromLine.FindAllStringSubmatchIndex(text, -1)
	if len(froms) < 2 {
		return df, errors.New("not a multi-stage build")
	}
	last := froms[len(froms)-1]
	build, final := text[:last[0]], text[last[0]:]
	base := text[last[2]:last[3]]
	if !strings.HasPrefix(base, "gcr.io/distroless/static") && base != "scratch" {
		return df, fmt.Errorf("final stage FROM %s, want distroless static or scratch", base)
	}
	if !regexp.MustCompile(`\bCGO_ENABLED=0\b`).MatchString(build) {
		return df, errors.New("build stage does not set CGO_ENABLED=0")
	}
	built := map[string]bool{}
	for _, b := range buildLine.FindAllString(build, -1) {
		for _, m := range cmdPackage.FindAllStringSubmatch(b, -1) {
			built[m[1]] = true
		}
	}
	if len(built) == 0 {
		return df, errors.New("no go build of ./cmd/...")
	}
	stages := map[string]bool{}
	for _, f := range froms[:len(froms)-1] {
		if f[4] >= 0 {
			stages[strings.ToLower(text[f[4]:f[5]])] = true
		}
	}
	for _, m := range copyFrom.FindAllStringSubmatch(final, -1) {
		if !stages[strings.ToLower(m[1])] {
			return df, fmt.Errorf("COPY --from=%s: no such build stage", m[1])
		}
		dst := m[3]
		for _, src := range strings.Fields(m[2]) {
			name := path.Base(src)
			if !built[name] {
				return df, fmt.Errorf("copies %s, which the build stage does not build", src)
			}
			if strings.HasSuffix(dst, "/") {
				df.binaries[name] = dst + name
			} else {
				df.binaries[name] = dst
			}
		}
	}
	if len(df.binaries) == 0 {
		return df, errors.New("final stage copies no binary")
	}
	users := userLine.FindAllStringSubmatch(final, -1)
	if len(users) == 0 {
		return df, errors.New("final stage has no USER (it would run as root)")
	}
	uid, err := strconv.ParseInt(strings.SplitN(users[len(users)-1][1], ":", 2)[0], 10, 64)
	if err != nil || uid == 0 {
		return df, fmt.Errorf("USER %s: want a numeric non-root uid (runAsNonRoot needs one)", users[len(users)-1][1])
	}
	df.uid = uid
	return df, nil
}

// TestDockerfileBuildsWhatManifestsRun: no docker engine runs here, so the
// Dockerfile is parsed: it builds every binary a manifest runs, installs
// it at the path the manifest runs, for every ./cmd package that exists,
// and its USER is the uid the pods run as.
func TestDockerfileBuildsWhatManifestsRun(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df, err := parseDockerfile(string(data))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	for name := range df.binaries {
		if st, err := os.Stat(filepath.Join("..", "..", "cmd", name)); err != nil || !st.IsDir() {
			t.Errorf("Dockerfile builds ./cmd/%s, which does not exist", name)
		}
	}
	// and the image has every binary of the module
	cmds, err := os.ReadDir(filepath.Join("..", "..", "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cmds {
		if _, ok := df.binaries[e.Name()]; e.IsDir() && !ok {
			t.Errorf("the Dockerfile does not build ./cmd/%s", e.Name())
		}
	}
	for _, pc := range ptcContainers(t, loadManifests(t)) {
		if p, ok := df.binaries[pc.binary]; !ok || p != pc.c.Command[0] {
			t.Errorf("%s runs %s; the image has %v", pc.where, pc.c.Command[0], df.binaries)
		}
		uid := pc.pod.Spec.SecurityContext.RunAsUser
		if pc.c.SecurityContext.RunAsUser != nil {
			uid = pc.c.SecurityContext.RunAsUser
		}
		if uid == nil || *uid != df.uid {
			t.Errorf("%s: runAsUser %v, image USER %d", pc.where, uid, df.uid)
		}
	}
	ignore, err := os.ReadFile(filepath.Join("..", "..", ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(ignore), "\n") {
		switch strings.TrimSpace(line) {
		case "go.mod", "go.sum", "cmd", "cmd/", "pkg", "pkg/", "internal", "internal/", "examples", "examples/", "*", "**/*.go":
			t.Errorf(".dockerignore excludes %q, which the build needs", line)
		}
	}
}

func TestParseDockerfileRejects(t *testing.T) {
	good := "FROM golang:1.26 AS build\nRUN CGO_ENABLED=0 go build -o /out/ ./cmd/worker \\\n  ./cmd/dispatcher\nFROM gcr.io/distroless/static-debian12:nonroot\nCOPY --from=build /out/worker /out/dispatcher /usr/local/bin/\nUSER 65532:65532\n"
	df, err := parseDockerfile(good)
	if err != nil {
		t.Fatalf("good Dockerfile: %v", err)
	}
	if df.uid != 65532 || df.binaries["dispatcher"] != "/usr/local/bin/dispatcher" || len(df.binaries) != 2 {
		t.Fatalf("parsed %+v", df)
	}
	tests := []struct{ name, from, to, wantErr string }{
		{"single stage", "FROM golang:1.26 AS build\n", "", "multi-stage"},
		{"cgo on", "CGO_ENABLED=0 ", "", "CGO_ENABLED=0"},
		{"fat base", "gcr.io/distroless/static-debian12:nonroot", "debian:12", "distroless static or scratch"},
		{"root", "USER 65532:65532\n", "USER 0\n", "non-root"},
		{"named user", "USER 65532:65532\n", "USER nonroot\n", "numeric"},
		{"no user", "USER 65532:65532\n", "", "no USER"},
		{"unbuilt binary", "/out/dispatcher /usr", "/out/shoptools /usr", "does not build"},
		{"wrong stage", "--from=build /out", "--from=builder /out", "no such build stage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseDockerfile(strings.Replace(good, tt.from, tt.to, 1))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseUsage(t *testing.T) {
	out := "usage: worker [flags]\n\nflags (each also read from its environment variable):\n  -drain-grace  [PTC_DRAIN_GRACE]\n      on SIGTERM, how long (default 25s)\n  -example-tools  [PTC_EXAMPLE_TOOLS]\n      also serve the example shop tools from this process\n"
	f, err := parseUsage(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(f) != 2 || f["PTC_DRAIN_GRACE"] != "25s" || f["PTC_EXAMPLE_TOOLS"] != "" {
		t.Fatalf("parsed %v", f)
	}
	if _, err := parseUsage("worker: flag provided but not defined: -h"); err == nil {
		t.Fatal("no error for usage without flags")
	}
}

// TestOperationsDocListsEveryVariable: docs/operations.md documents every
// environment variable of every binary (and dispatcher command) with its
// default, as the binaries print them.
func TestOperationsDocListsEveryVariable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	bins := buildBinaries(t)
	check := func(what, env, def string) {
		t.Helper()
		for _, l := range lines {
			if strings.Contains(l, "`"+env+"`") && (def == "" || strings.Contains(l, "`"+def+"`")) {
				return
			}
		}
		if def == "" {
			t.Errorf("%s: %s is not documented", what, env)
		} else {
			t.Errorf("%s: %s is not documented with its default `%s`", what, env, def)
		}
	}
	for _, b := range []struct {
		name string
		args []string
	}{
		{"worker", nil}, {"shoptools", nil},
		{"dispatcher", []string{"submit"}}, {"dispatcher", []string{"wait"}}, {"dispatcher", []string{"status"}},
		{"dispatcher", []string{"cancel"}}, {"dispatcher", []string{"watch"}}, {"dispatcher", []string{"local"}},
	} {
		what := strings.TrimSpace(b.name + " " + strings.Join(b.args, " "))
		for env, def := range bins.flags(t, b.name, b.args) {
			check(what, env, def)
		}
	}
	for _, k := range append(providerKeys, llmconfig.EnvPrefix+"<NAME>") {
		check("worker", k, "")
	}
}

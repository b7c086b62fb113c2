package k8s_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/ptcfleet/ptc/deploy/k8s/natsauth"
	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// natsSetup is the NATS side of the manifests: the StatefulSet, its config
// files written to a directory, and the values its environment gives the
// config's variables in the test.
type natsSetup struct {
	sts  *appsv1.StatefulSet
	dir  string            // nats.conf and auth.conf
	vars map[string]string // env var → test value
	// passwordVar maps a password value back to the variable it came from.
	passwordVar map[string]string
}

// natsConfig writes the ptc-nats-config ConfigMap's files to a temporary
// directory and sets, with t.Setenv, every environment variable the NATS
// container gets from its manifest (so a variable the config uses but the
// StatefulSet does not set makes the config fail to load).
func natsConfig(t *testing.T, ms []manifest) natsSetup {
	t.Helper()
	sts := find[*appsv1.StatefulSet](t, ms, "StatefulSet", "ptc-nats")
	cm := find[*corev1.ConfigMap](t, ms, "ConfigMap", "ptc-nats-config")
	ns := natsSetup{sts: sts, dir: t.TempDir(), vars: map[string]string{}, passwordVar: map[string]string{}}
	for name, data := range cm.Data {
		if err := os.WriteFile(filepath.Join(ns.dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
		if slices.Contains(runtimeEnv, e.Name) {
			continue // for the Go runtime, not for nats.conf (and not for go build)
		}
		v := "test-" + strings.ToLower(e.Name)
		if e.Name == "SERVER_NAME" {
			v = sts.Name + "-0"
		}
		t.Setenv(e.Name, v)
		ns.vars[e.Name] = v
		ns.passwordVar[v] = e.Name
	}
	return ns
}

// natsUser is one user of authorization {} as nats-server's parser returns
// it, re-encoded as JSON values for comparison.
type natsUser map[string]any

func authUsers(t *testing.T, path string) []natsUser {
	t.Helper()
	m, err := conf.ParseFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	accounts, _ := m["accounts"].(map[string]any)
	var all []any
	for _, name := range sortedNames(accounts) {
		a, _ := accounts[name].(map[string]any)
		users, _ := a["users"].([]any)
		all = append(all, users...)
	}
	return toUsers(t, all)
}

func sortedNames(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func toUsers(t *testing.T, v any) []natsUser {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var users []natsUser
	if err := json.Unmarshal(data, &users); err != nil || len(users) == 0 {
		t.Fatalf("users: %v (%s)", err, data)
	}
	return users
}

func userByName(users []natsUser, name string) natsUser {
	for _, u := range users {
		if u["user"] == name {
			return u
		}
	}
	return nil
}

// perm returns permissions.<dir>.<kind> of a user ("publish", "allow").
func (u natsUser) perm(dir, kind string) []string {
	p, _ := u["permissions"].(map[string]any)
	d, _ := p[dir].(map[string]any)
	l, _ := d[kind].([]any)
	var out []string
	for _, s := range l {
		out = append(out, fmt.Sprint(s))
	}
	return out
}

// TestNATSConfigLoads loads nats.conf (with auth.conf) as nats-server does,
// with the environment the StatefulSet gives it, and checks it against the
// StatefulSet and its Services.
func TestNATSConfigLoads(t *testing.T) {
	ms := loadManifests(t)
	ns := natsConfig(t, ms)
	opts, err := server.ProcessConfigFile(filepath.Join(ns.dir, "nats.conf"))
	if err != nil {
		t.Fatalf("nats.conf: %v", err)
	}
	sts := ns.sts
	if opts.ServerName != ns.vars["SERVER_NAME"] {
		t.Errorf("server_name %q, want the pod name %q", opts.ServerName, ns.vars["SERVER_NAME"])
	}
	if !opts.JetStream || opts.HTTPPort != 8222 || opts.Port != 4222 || opts.Cluster.Port != 6222 {
		t.Errorf("jetstream %v, ports client %d monitor %d cluster %d", opts.JetStream, opts.Port, opts.HTTPPort, opts.Cluster.Port)
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 || len(opts.Routes) != 3 {
		t.Fatalf("replicas %v, routes %v: want 3 and one route per server", sts.Spec.Replicas, opts.Routes)
	}
	for i, r := range opts.Routes {
		if want := fmt.Sprintf("%s-%d.%s", sts.Name, i, sts.Spec.ServiceName); r.Hostname() != want || r.Port() != "6222" {
			t.Errorf("route %d: %s, want %s:6222", i, r, want)
		}
	}
	headless := find[*corev1.Service](t, ms, "Service", sts.Spec.ServiceName)
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("service %s must be headless and publish not-ready addresses", headless.Name)
	}
	mounts := map[string]string{}
	for _, vm := range sts.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounts[vm.MountPath] = vm.Name
	}
	if mounts[opts.StoreDir] == "" || mounts[filepath.Dir(opts.PidFile)] == "" {
		t.Errorf("store_dir %s and pid_file %s must be on volumes (read-only root)", opts.StoreDir, opts.PidFile)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Name != mounts[opts.StoreDir] {
		t.Fatalf("store_dir %s is not on the PVC", opts.StoreDir)
	}
	pvc := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
	if opts.JetStreamMaxStore <= 0 || opts.JetStreamMaxStore >= pvc.Value() {
		t.Errorf("max_file_store %d bytes does not fit the %s PVC", opts.JetStreamMaxStore, pvc.String())
	}
	mem := sts.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
	if opts.JetStreamMaxMemory <= 0 || opts.JetStreamMaxMemory >= mem.Value()/2 {
		t.Errorf("max_memory_store %d bytes: more than half the %s memory limit", opts.JetStreamMaxMemory, mem.String())
	}
	if opts.LameDuckDuration+opts.LameDuckGracePeriod >= time.Duration(*sts.Spec.Template.Spec.TerminationGracePeriodSeconds)*time.Second {
		t.Errorf("lame duck %s + %s does not fit in terminationGracePeriodSeconds", opts.LameDuckDuration, opts.LameDuckGracePeriod)
	}
	if len(opts.Users) != 6 {
		t.Errorf("%d users, want dispatcher, worker, approver, shoptools, mcptools and admin", len(opts.Users))
	}
	for _, u := range opts.Users {
		if v := ns.passwordVar[u.Password]; !strings.HasPrefix(v, "NATS_") {
			t.Errorf("user %s: password is not read from the environment", u.Username)
		}
	}
}

// TestRolesWiredToUsers: each container that connects to NATS names a user
// of auth.conf, reads that user's password from the same Secret key as the
// server, and uses an inbox prefix the user may subscribe to.
func TestRolesWiredToUsers(t *testing.T) {
	ms := loadManifests(t)
	ns := natsConfig(t, ms)
	users := authUsers(t, filepath.Join(ns.dir, "auth.conf"))
	serverKey := map[string]string{} // env var → secret/key
	for _, e := range ns.sts.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			serverKey[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	roles := map[string]bool{}
	for _, pc := range ptcContainers(t, ms) {
		t.Run(pc.where, func(t *testing.T) {
			name := pc.env["PTC_NATS_USER"]
			u := userByName(users, name)
			if u == nil {
				t.Fatalf("PTC_NATS_USER %q is not a user of auth.conf", name)
			}
			roles[name] = true
			if r, ok := pc.env["PTC_REPLICAS"]; ok && r != fmt.Sprint(*ns.sts.Spec.Replicas) {
				t.Errorf("PTC_REPLICAS %s; NATS runs %d servers", r, *ns.sts.Spec.Replicas)
			}
			var ref *corev1.SecretKeySelector
			for _, e := range pc.c.Env {
				if e.Name == "PTC_NATS_PASSWORD" {
					if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
						t.Fatal("PTC_NATS_PASSWORD must come from a Secret")
					}
					ref = e.ValueFrom.SecretKeyRef
				}
			}
			if ref == nil {
				t.Fatal("no PTC_NATS_PASSWORD")
			}
			pwVar := ns.passwordVar[fmt.Sprint(u["password"])]
			if got, want := ref.Name+"/"+ref.Key, serverKey[pwVar]; got != want {
				t.Errorf("password from %s; the server reads user %s's from %s (%s)", got, name, want, pwVar)
			}
			subs := u.perm("subscribe", "allow")
			if contains(subs, "_INBOX.>") || contains(subs, ">") {
				t.Errorf("user %s may read every inbox", name)
			}
			inboxes := 0
			for _, s := range subs {
				if strings.HasPrefix(s, "_INBOX") {
					inboxes++
				}
			}
			prefix := pc.env["PTC_NATS_INBOX_PREFIX"]
			switch {
			case inboxes == 0 && prefix != "":
				t.Errorf("inbox prefix %q, but user %s may subscribe to no inbox", prefix, name)
			case inboxes > 0 && (prefix == "" || !contains(subs, prefix+".>")):
				t.Errorf("inbox prefix %q: user %s may subscribe to %v", prefix, name, subs)
			}
		})
	}
	for _, r := range []string{"dispatcher", "worker", "shoptools"} {
		if !roles[r] {
			t.Errorf("no container connects as %s", r)
		}
	}
}

// finalStatus reads a mission's status once it has left running: the
// worker stores the result first and makes the status final just after,
// so a reader that has the result may still see running for a moment.
func finalStatus(ctx context.Context, c *fleet.Client, id string) (*messages.Status, error) {
	for {
		st, err := c.Status(ctx, id)
		if err != nil || st.State != messages.StateRunning {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, nil
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestHelmValuesMatchManifests: helm/nats-values.yaml gives the official
// chart the same users, permissions, password sources, replicas and names
// as the plain manifests.
func TestHelmValuesMatchManifests(t *testing.T) {
	ms := loadManifests(t)
	ns := natsConfig(t, ms)
	data, err := os.ReadFile(filepath.Join("helm", "nats-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		NameOverride     string `json:"nameOverride"`
		FullnameOverride string `json:"fullnameOverride"`
		Config           struct {
			Cluster struct {
				Enabled  bool `json:"enabled"`
				Replicas int  `json:"replicas"`
			} `json:"cluster"`
			JetStream struct {
				Enabled   bool `json:"enabled"`
				FileStore struct {
					Enabled bool `json:"enabled"`
					PVC     struct {
						Enabled bool `json:"enabled"`
					} `json:"pvc"`
				} `json:"fileStore"`
			} `json:"jetstream"`
			Monitor struct {
				Enabled bool `json:"enabled"`
				Port    int  `json:"port"`
			} `json:"monitor"`
			Merge struct {
				Accounts map[string]struct {
					JetStream string `json:"jetstream"`
					Users     []any  `json:"users"`
				} `json:"accounts"`
			} `json:"merge"`
		} `json:"config"`
		Container struct {
			Env map[string]any `json:"env"`
		} `json:"container"`
	}
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	sts := ns.sts
	if v.FullnameOverride != sts.Name || v.NameOverride != sts.Spec.Selector.MatchLabels["app.kubernetes.io/name"] {
		t.Errorf("names %q/%q; the fleet expects service %s and label %s", v.FullnameOverride, v.NameOverride, sts.Name, sts.Spec.Selector.MatchLabels["app.kubernetes.io/name"])
	}
	c := v.Config
	if !c.Cluster.Enabled || c.Cluster.Replicas != int(*sts.Spec.Replicas) || !c.JetStream.Enabled ||
		!c.JetStream.FileStore.Enabled || !c.JetStream.FileStore.PVC.Enabled || !c.Monitor.Enabled || c.Monitor.Port != 8222 {
		t.Errorf("cluster/jetstream/monitor settings differ from the StatefulSet: %+v", c)
	}
	want := authUsers(t, filepath.Join(ns.dir, "auth.conf"))
	var helmUsers []any
	var names []string
	for name := range c.Merge.Accounts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if c.Merge.Accounts[name].JetStream != "enabled" {
			t.Errorf("account %s: jetstream %q", name, c.Merge.Accounts[name].JetStream)
		}
		helmUsers = append(helmUsers, c.Merge.Accounts[name].Users...)
	}
	got := toUsers(t, helmUsers)
	// Passwords: "<< $VAR >>" in the chart, $VAR (resolved) in auth.conf.
	for _, u := range got {
		pw := fmt.Sprint(u["password"])
		name := strings.TrimSuffix(strings.TrimPrefix(pw, "<< $"), " >>")
		if pw == name {
			t.Errorf("user %v: password %q is not an unquoted variable (<< $VAR >>)", u["user"], pw)
		}
		u["password"] = ns.vars[name]
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("helm users differ from auth.conf:\nhelm: %s\nauth.conf: %s", g, w)
	}
	for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		var hv struct {
			ValueFrom corev1.EnvVarSource `json:"valueFrom"`
		}
		raw, _ := json.Marshal(v.Container.Env[e.Name])
		if err := json.Unmarshal(raw, &hv); err != nil || hv.ValueFrom.SecretKeyRef == nil ||
			*hv.ValueFrom.SecretKeyRef != *e.ValueFrom.SecretKeyRef {
			t.Errorf("container.env.%s = %s, want the StatefulSet's secretKeyRef %+v", e.Name, raw, *e.ValueFrom.SecretKeyRef)
		}
	}
}

// role is a connection as one of auth.conf's users, recording the
// permission violations the server reports on it.
type role struct {
	nc *nats.Conn
	mu sync.Mutex
	v  []string
}

func (r *role) violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.v...)
}

// waitViolation waits until the server has reported a violation mentioning
// subject (they arrive asynchronously).
func (r *role) waitViolation(t *testing.T, subject string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, v := range r.violations() {
			if strings.Contains(v, `"`+subject+`"`) {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("no permissions violation for %q; got %v", subject, r.violations())
}

func connectAs(t *testing.T, url, user, password, inbox string) *role {
	t.Helper()
	r := &role{}
	opts := []nats.Option{
		nats.UserInfo(user, password),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(err.Error(), "Permissions Violation") {
				r.mu.Lock()
				r.v = append(r.v, err.Error())
				r.mu.Unlock()
			}
		}),
	}
	if inbox != "" {
		opts = append(opts, nats.CustomInboxPrefix(inbox))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	r.nc = nc
	return r
}

// TestNATSPermissionsRunTheFleet starts a NATS server with the manifests'
// auth.conf and runs a mission through the fleet, each part connected as
// its role with the inbox prefix its manifest sets: the permissions allow
// everything the fleet does (a missing one would show as a timeout), and
// refuse what a role must not do.
func TestNATSPermissionsRunTheFleet(t *testing.T) {
	ms := loadManifests(t)
	ns := natsConfig(t, ms)
	srv := startAuthServer(t, ns)
	url := srv.ClientURL()

	env := map[string]map[string]string{}
	for _, pc := range ptcContainers(t, ms) {
		if pc.isSetup() {
			env["setup"] = pc.env
			continue
		}
		env[pc.binary] = pc.env
	}
	as := func(binary string) *role {
		e := env[binary]
		return connectAs(t, url, e["PTC_NATS_USER"], ns.vars[ns.passwordVarOf(t, e["PTC_NATS_USER"])], e["PTC_NATS_INBOX_PREFIX"])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The admin's setup step creates the layout; no other role may.
	admin := as("setup")
	adminJS, err := jetstream.New(admin.nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.EnsureStores(ctx, adminJS, fleet.StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 3}); err != nil {
		t.Fatalf("setup as admin: %v", err)
	}

	tools := as("shoptools")
	svc, err := fleet.NewToolService(tools.nc, fleet.ToolServiceConfig{Name: shop.ServiceName})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	if err := shop.Generate(20, 50, 10).Register(svc); err != nil {
		t.Fatal(err)
	}

	worker := as("worker")
	w, err := fleet.NewWorker(worker.nc, fleet.WorkerConfig{
		ID: "w1", Slots: 2, Store: fleet.StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 3, VerifyOnly: true},
		IdleWait: 100 * time.Millisecond, DrainGrace: time.Second, ToolTimeout: 5 * time.Second,
		DiscoveryWait: 200 * time.Millisecond,
		Runner: fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
			if m.Context["block"] == true {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			if m.Context["large"] == true { // stored aside in mission_results
				return &messages.Step{Return: strings.Repeat("x", 2<<20)}, nil
			}
			got, err := env.Tools.Call(ctx, "list_customers", map[string]any{"region": "north"})
			if err != nil {
				return nil, err
			}
			return &messages.Step{Return: map[string]any{"customers": got}}, nil
		}),
	})
	if err != nil {
		t.Fatalf("worker: %v", err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatalf("worker start: %v", err)
	}
	defer w.Stop() // idempotent

	dispatcher := as("dispatcher")
	client, err := fleet.NewClient(ctx, dispatcher.nc, fleet.ClientConfig{Store: fleet.StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 3}})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Agent: &messages.AgentSpec{Prompt: "list", Tools: []string{"list_customers"}}, Tools: []string{"list_customers"}}
	if _, err := client.Submit(ctx, m); err != nil {
		t.Fatalf("submit: %v", err)
	}
	step, err := client.Await(ctx, m.ID)
	if err != nil {
		t.Fatalf("await: %v", err)
	}
	if step.Fail != nil {
		t.Fatalf("mission failed: %v", step.Fail)
	}
	if cs, _ := step.Return.(map[string]any)["customers"].([]any); len(cs) == 0 {
		t.Fatalf("result %#v has no customers from the tool service", step.Return)
	}
	var kinds []string
	if err := client.Watch(ctx, m.ID, func(ev *messages.Event) error { kinds = append(kinds, ev.Kind); return nil }); err != nil {
		t.Fatalf("watch: %v", err)
	}
	if !contains(kinds, messages.EventToolCall) || !contains(kinds, messages.EventFinal) {
		t.Errorf("events %v, want tool_call and final", kinds)
	}
	if st, err := finalStatus(ctx, client, m.ID); err != nil || st.State != messages.StateSucceeded {
		t.Errorf("status %+v, %v", st, err)
	}
	// What dispatcher list, trace and ui read: the status bucket's keys,
	// the stored result and the stored events.
	if ms, err := client.List(ctx, fleet.ListOptions{}); err != nil || len(ms) != 1 || ms[0].MissionID != m.ID {
		t.Errorf("list as the dispatcher: %+v, %v", ms, err)
	}
	if evs, err := client.Events(ctx, m.ID); err != nil || len(evs) != len(kinds) {
		t.Errorf("stored events as the dispatcher: %d, %v; want %d", len(evs), err, len(kinds))
	}
	// What dispatcher replay reads: the record the worker kept of the
	// mission, next to its result.
	if rec, err := client.Record(ctx, m.ID); err != nil || rec.Mission.ID != m.ID || len(rec.Tools) != 1 || rec.Tools[0].Name != "list_customers" {
		t.Errorf("the mission's record as the dispatcher: %+v, %v", rec, err)
	}

	// A Step too large for one message: the worker stores it in
	// mission_results, the dispatcher reads it with direct gets.
	large := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Agent: &messages.AgentSpec{Prompt: "large"}, Context: map[string]any{"large": true}}
	if _, err := client.Submit(ctx, large); err != nil {
		t.Fatalf("submit: %v", err)
	}
	if step, err := client.Await(ctx, large.ID); err != nil || step.Fail != nil || step.Return != strings.Repeat("x", 2<<20) {
		t.Fatalf("a large result as the dispatcher: %v", err)
	}

	// Cancel reaches the worker (mission.cancel.*, status KV).
	blocked := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Agent: &messages.AgentSpec{Prompt: "wait"}, Context: map[string]any{"block": true}}
	if _, err := client.Submit(ctx, blocked); err != nil {
		t.Fatalf("submit: %v", err)
	}
	for ctx.Err() == nil {
		if st, err := client.Status(ctx, blocked.ID); err == nil && st.State == messages.StateRunning {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := client.Cancel(ctx, blocked.ID, "test"); err != nil {
		t.Fatalf("cancel running: %v", err)
	}
	if step, err := client.Await(ctx, blocked.ID); err != nil || step.Fail == nil {
		t.Fatalf("cancelled mission: step %+v, err %v; want a failure", step, err)
	}
	// Cancelling a queued mission: a worker (here one that serves only
	// the high priority, so the mission stays queued) carries it out and
	// stores its result.
	if err := w.Stop(); err != nil {
		t.Fatalf("worker stop: %v", err)
	}
	w2, err := fleet.NewWorker(worker.nc, fleet.WorkerConfig{
		ID: "w2", Slots: 1, Priorities: []string{messages.PriorityHigh},
		Store:    fleet.StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 3, VerifyOnly: true},
		IdleWait: 100 * time.Millisecond, DrainGrace: time.Second,
		Runner: fleet.RunnerFunc(func(context.Context, *messages.Mission, fleet.RunEnv) (*messages.Step, error) {
			return nil, errors.New("w2 runs nothing")
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	queued := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "never"},
		Priority: messages.PriorityLow}
	if _, err := client.Submit(ctx, queued); err != nil {
		t.Fatalf("submit: %v", err)
	}
	if st, err := client.Status(ctx, queued.ID); err != nil || st.State != messages.StateQueued {
		t.Fatalf("queued mission's status as the dispatcher: %+v, %v", st, err)
	}
	if err := client.Cancel(ctx, queued.ID, "test"); err != nil {
		t.Fatalf("cancel queued: %v", err)
	}
	if step, err := client.Await(ctx, queued.ID); err != nil || step.Fail == nil {
		t.Fatalf("cancelled queued mission: step %+v, err %v; want a failure", step, err)
	}
	for _, r := range []*role{tools, worker, dispatcher} {
		if v := r.violations(); len(v) > 0 {
			t.Errorf("the fleet's own traffic was refused: %v", v)
		}
	}

	// What each role must not do.
	pub := func(r *role, subject string) {
		t.Helper()
		if err := r.nc.Publish(subject, []byte("x")); err != nil {
			t.Fatal(err)
		}
		_ = r.nc.Flush()
		r.waitViolation(t, subject)
	}
	sub := func(r *role, subject string) {
		t.Helper()
		if _, err := r.nc.SubscribeSync(subject); err != nil {
			t.Fatal(err)
		}
		_ = r.nc.Flush()
		r.waitViolation(t, subject)
	}
	pub(worker, messages.SubmitSubject(natsauth.RoleDispatcher, "", m.ID)) // workers do not submit
	pub(worker, "tool.billing.refund")                                     // only the tool services listed
	pub(worker, "$JS.API.STREAM.DELETE.MISSIONS")                          // nor delete the queue
	sub(worker, "_INBOX.>")                                                // nor read others' replies
	sub(worker, messages.ResultSubject("*", "*"))
	pub(dispatcher, messages.ToolSubject(shop.ServiceName, "list_customers"))                      // dispatchers call no tools
	pub(dispatcher, messages.EventSubject(natsauth.RoleDispatcher, m.ID, 99, messages.EventFinal)) // nor forge progress
	pub(dispatcher, messages.ResultSubject(natsauth.RoleDispatcher, m.ID))                         // nor results
	pub(dispatcher, messages.StatusSubject(natsauth.RoleDispatcher, m.ID))                         // nor status
	pub(dispatcher, messages.ClaimSubject(natsauth.RoleDispatcher, m.ID, "forged"))                // nor a claim, which would fence a run's result
	pub(dispatcher, "$JS.API.STREAM.PURGE.MISSIONS")
	sub(dispatcher, messages.CancelWildcard)
	pub(tools, messages.SubmitSubject(natsauth.RoleDispatcher, "", m.ID)) // tool services only answer
	pub(tools, messages.ResultSubject(natsauth.RoleDispatcher, m.ID))
	pub(tools, messages.ClaimSubject(natsauth.RoleDispatcher, m.ID, "forged"))
	sub(tools, "mission.>")
}

// startAuthServer starts an in-process NATS server with the manifests'
// nats.conf and auth.conf, without the cluster, on ephemeral ports, with a
// temporary store.
// startAuthServerWith starts the shipped nats-server configuration with
// the users of accounts in place of the shipped ones, each password (when
// the environment has none) a test value.
func startAuthServerWith(t *testing.T, ns natsSetup, accounts []natsauth.Account) *server.Server {
	t.Helper()
	if err := os.WriteFile(filepath.Join(ns.dir, "auth.conf"), []byte(natsauth.AuthConf(accounts)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range natsauth.PasswordVars(accounts) {
		if os.Getenv(v) == "" {
			t.Setenv(v, "test-"+strings.ToLower(v))
		}
	}
	return startAuthServer(t, ns)
}

func startAuthServer(t *testing.T, ns natsSetup) *server.Server {
	t.Helper()
	opts, err := server.ProcessConfigFile(filepath.Join(ns.dir, "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", -1, 0
	opts.Cluster = server.ClusterOpts{}
	opts.Routes = nil
	opts.StoreDir = t.TempDir()
	opts.PidFile = ""
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	return srv
}

// passwordVarOf returns the environment variable auth.conf reads user's
// password from.
func (ns natsSetup) passwordVarOf(t *testing.T, user string) string {
	t.Helper()
	u := userByName(authUsers(t, filepath.Join(ns.dir, "auth.conf")), user)
	if u == nil {
		t.Fatalf("no user %q in auth.conf", user)
	}
	return ns.passwordVar[fmt.Sprint(u["password"])]
}

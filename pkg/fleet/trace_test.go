package fleet_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/syncbuf"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// Trace context and the mission id travel in headers from the submitted
// mission to the runner and on to the tool service; the worker's logs carry
// the mission id.
func TestTraceHeadersAndMissionLogs(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "trace"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	var mu sync.Mutex
	var seen fleet.CallInfo
	if err := svc.Register("probe", fleet.ToolSpec{}, func(ctx context.Context, args map[string]any) (any, error) {
		ci, _ := fleet.CallInfoFrom(ctx)
		mu.Lock()
		seen = ci
		mu.Unlock()
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	var runnerTrace string
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		runnerTrace = env.Header.Get(messages.HeaderTraceParent)
		zerolog.Ctx(ctx).Info().Msg("from the runner")
		_, err := env.Tools.Call(ctx, "probe", nil)
		return &messages.Step{}, err
	}), func(cfg *fleet.WorkerConfig) {
		log := zerolog.New(&logs)
		cfg.Logger = &log
	})
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	m := newMission("probe")
	step, err := c.Run(testCtx(t), m, fleet.SubmitOptions{Header: nats.Header{messages.HeaderTraceParent: {tp}}})
	if err != nil || !step.Ok() {
		t.Fatalf("Run = %+v, %v", step, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if runnerTrace != tp || seen.Header.Get(messages.HeaderTraceParent) != tp {
		t.Errorf("traceparent: runner %q, tool %q", runnerTrace, seen.Header.Get(messages.HeaderTraceParent))
	}
	if seen.MissionID != m.ID || seen.Tool != "probe" || seen.CallID == "" || seen.Header.Get(messages.HeaderMissionID) != m.ID {
		t.Errorf("call info = %+v", seen)
	}
	if out := logs.String(); !strings.Contains(out, `"mission_id":"`+m.ID+`","submitter":"anonymous","attempt":1,"message":"from the runner"`) {
		t.Errorf("logs:\n%s", out)
	}
	eventually(t, 5*time.Second, "the final log line", func() bool {
		return strings.Contains(logs.String(), `"state":"succeeded","mission_id":"`+m.ID+`","submitter":"anonymous","attempt":1,"message":"mission finished"`)
	})
}

// EnsureStores is idempotent and applies the documented configuration.
func TestEnsureStoresIdempotent(t *testing.T) {
	_, nc := runJetStream(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if _, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{}); err != nil {
		t.Fatal(err)
	}
	st, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{MaxDeliver: 7})
	if err != nil {
		t.Fatal(err)
	}
	res := st.Results.CachedInfo().Config
	if res.MaxMsgsPerSubject != 1 || !res.DiscardNewPerSubject || !res.AllowDirect || res.Discard != jetstream.DiscardNew {
		t.Errorf("RESULTS config = %+v", res)
	}
	mis := st.Missions.CachedInfo().Config
	if mis.Retention != jetstream.WorkQueuePolicy || mis.Duplicates < 10*60e9 || mis.MaxMsgSize != messages.MaxMissionBytes || mis.Discard != jetstream.DiscardNew {
		t.Errorf("MISSIONS config = %+v", mis)
	}
	ci := st.Consumers[messages.PriorityNormal].CachedInfo().Config
	if ci.MaxDeliver != 7 || ci.AckPolicy != jetstream.AckExplicitPolicy || ci.FilterSubject != "mission.submit.*.normal.*" {
		t.Errorf("consumer config = %+v", ci)
	}
	if n := len(st.Lanes[messages.PriorityNormal]); n != messages.MissionLanes {
		t.Fatalf("%d lanes of normal, want %d", n, messages.MissionLanes)
	}
	ci = st.Lanes[messages.PriorityNormal][3].CachedInfo().Config
	if ci.Name != "workers-normal-3" || ci.MaxDeliver != 7 || ci.AckPolicy != jetstream.AckExplicitPolicy || ci.FilterSubject != "mission.submit.*.normal.*.3" {
		t.Errorf("lane consumer config = %+v", ci)
	}
	if tr := mis.SubjectTransform; tr == nil || tr.Source != "mission.*.*.*.*" ||
		tr.Destination != "mission.submit.{{wildcard(2)}}.{{wildcard(3)}}.{{wildcard(4)}}.{{partition(8,2)}}" {
		t.Errorf("MISSIONS subject transform = %+v", tr)
	}
	if !slices.Equal(mis.Subjects, []string{"mission.submit.*.*.*", "mission.woken.*.*.*"}) {
		t.Errorf("MISSIONS subjects = %v", mis.Subjects)
	}
}

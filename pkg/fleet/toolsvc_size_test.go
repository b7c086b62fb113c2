package fleet_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A result larger than messages.LargeResultBytes travels out of band: the
// service puts it in its results bucket and replies with a reference,
// the caller reads it as a stream and gets the very value, in Go data and
// through a ResultDecoder; a small one stays inline; a referenced result
// over the caller's data limit is refused, naming the limit, before it is
// read; with out-of-band results off, a result too large for one NATS
// message is answered with a tool error the model can act on, not
// dropped.
func TestToolServiceLargeResultTravelsByReference(t *testing.T) {
	_, nc := runJetStream(t)
	serve := func(name string, large int) {
		svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: name, LargeResultBytes: large})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Stop(context.Background()) })
		if err := svc.Register(name+"_dump", fleet.ToolSpec{}, func(_ context.Context, args map[string]any) (any, error) {
			n, _ := args["n"].(int64)
			return strings.Repeat("x", int(n)), nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := svc.Register(name+"_records", fleet.ToolSpec{}, func(_ context.Context, args map[string]any) (any, error) {
			n, _ := args["n"].(int64)
			return records(int(n)), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	serve("big", 0)
	serve("inline", -1)
	limit := int(nc.MaxPayload())
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"big_dump", "big_records", "inline_dump"}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)

	var seen *fleet.ToolResult
	keep := func(ctx context.Context, r *fleet.ToolResult) (any, error) {
		seen = r
		rc, err := r.Open(ctx)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		data, err := io.ReadAll(rc)
		if err != nil {
			return nil, err
		}
		var v any
		return v, messages.UnmarshalAs(r.ContentType, data, &v)
	}
	small, err := box.CallAs(ctx, "big_dump", map[string]any{"n": int64(1000)}, keep)
	if err != nil || len(small.(string)) != 1000 || seen.Ref != nil || len(seen.Data) == 0 {
		t.Fatalf("small result: %v, ref %v", err, seen.Ref)
	}
	got, err := box.CallAs(ctx, "big_dump", map[string]any{"n": int64(2 * limit)}, keep)
	if err != nil || got.(string) != strings.Repeat("x", 2*limit) {
		t.Fatalf("result of twice the payload limit: %v", err)
	}
	if seen.Ref == nil || seen.Data != nil || seen.Ref.Bucket != messages.ToolResultBucket("big") || seen.Ref.Size <= int64(2*limit) {
		t.Fatalf("large result not sent by reference: %+v", seen.Ref)
	}
	want := records(20_000)
	plain, err := box.Call(ctx, "big_records", map[string]any{"n": int64(20_000)})
	if err != nil {
		t.Fatal(err)
	}
	if !equalPlain(plain, want) {
		t.Fatal("20,000 records read back differ")
	}

	// the caller's data limit: refused before reading, the limit named
	tight, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"big_dump"}, Timeout: 10 * time.Second, MaxData: int64(limit)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tight.Call(ctx, "big_dump", map[string]any{"n": int64(2 * limit)})
	var te *fleet.ToolError
	var de *fleet.DataLimitError
	if !errors.As(err, &te) || !errors.As(err, &de) || de.Limit != int64(limit) ||
		!strings.Contains(te.Message, "data limit") || !strings.Contains(te.Message, "max_data") {
		t.Fatalf("over the data limit: %v", err)
	}

	// the object expires with the bucket's TTL
	js, _ := jetstream.New(nc)
	obs, err := js.ObjectStore(ctx, messages.ToolResultBucket("big"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := obs.Status(ctx)
	if err != nil || st.TTL() != fleet.DefaultToolResultTTL {
		t.Fatalf("results bucket TTL %v, %v", st.TTL(), err)
	}

	// out of band off: too large for one message is a tool error
	_, err = box.Call(ctx, "inline_dump", map[string]any{"n": int64(limit + 10)})
	if !errors.As(err, &te) || te.Code != messages.ToolErrFailed || !strings.Contains(te.Message, "ask for less") {
		t.Fatalf("oversized inline result: %v", err)
	}
}

// records returns n records of 12 fields, as plain Go data.
func records(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{
			"id": int64(i), "from": "sender" + string(rune('a'+i%26)) + "@example.com", "to": "team@example.com",
			"subject": "Quarterly numbers", "body": "Please find the figures attached; reply by Friday.",
			"date": "2026-01-02T03:04:05Z", "unread": i%3 == 0, "size": int64(1000 + i%977), "score": float64(i%100) / 7,
			"labels": []any{"inbox", "work"}, "thread": int64(i / 4), "folder": "INBOX",
		}
	}
	return out
}

func equalPlain(a, b any) bool {
	x, err1 := messages.Marshal(a)
	y, err2 := messages.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// A mission's max_data bounds the tool results it reads: a larger one sent
// out of band is refused from its reference, with the limit named, and a
// mission without the limit reads it.
func TestMissionMaxDataBoundsToolResults(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	if err := svc.Register("dump", fleet.ToolSpec{}, func(context.Context, map[string]any) (any, error) {
		return strings.Repeat("x", 2<<20), nil
	}); err != nil {
		t.Fatal(err)
	}
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		got, err := env.Tools.Call(ctx, "dump", nil)
		if err != nil {
			return &messages.Step{Return: err.Error()}, nil
		}
		return &messages.Step{Return: int64(len(got.(string)))}, nil
	}), func(cfg *fleet.WorkerConfig) { cfg.ToolTimeout = 10 * time.Second })
	for _, c2 := range []struct {
		limit int64
		want  any
	}{{0, int64(2 << 20)}, {1 << 20, "data limit of 1048576 bytes"}, {-1, int64(2 << 20)}} {
		m := newMission()
		m.Tools = []string{"dump"}
		m.Agent.MaxData = c2.limit
		step, err := c.Run(testCtx(t), m)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := c2.want.(string); ok {
			if got, _ := step.Return.(string); !strings.Contains(got, s) || !strings.Contains(got, "limits.max_data") {
				t.Errorf("max_data %d: %v, want an error naming %q", c2.limit, step.Return, s)
			}
		} else if step.Return != c2.want {
			t.Errorf("max_data %d: %v, want %v", c2.limit, step.Return, c2.want)
		}
	}
}

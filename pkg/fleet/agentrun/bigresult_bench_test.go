package agentrun_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// BenchmarkLargeToolResult measures a large tool result from the tool's
// reply to the program's answer: the object (email records of 12 fields,
// as many as make 20 MiB and 80 MiB of msgpack: mailRecordsFor) is read
// from a JetStream object store and the program filters it. "ptc"
// streams the object into interpreter values (lisp.DecodeWireResultFrom,
// as a worker does) inside a lisp.Run whose program counts the large
// unread records; "ptc-def" keeps the result with def first, so the
// Step's memory holds it too. "go" is the hand-written twin in the same
// run: it reads the same object whole, decodes it with messages.Unmarshal
// and counts the same records in Go. heap/encoded is the peak live heap
// after a GC at the answer (the Step, or the twin's records, still held),
// over the encoded size.
func BenchmarkLargeToolResult(b *testing.B) {
	srv := fleettest.Start(b)
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		b.Fatal(err)
	}
	// an object store read without a deadline is bounded by the client's
	// default API timeout (5 s) as a whole; a worker reads within its
	// program's timeout
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: messages.ToolResultBucket("bench")})
	if err != nil {
		b.Fatal(err)
	}
	for _, mib := range []int{20, 80} {
		n, err := mailRecordsFor(mib << 20)
		if err != nil {
			b.Fatal(err)
		}
		data, err := messages.Marshal(fleettest.MailRecords(n))
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("records-%d", n)
		info, err := obs.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		ref := &messages.ObjectRef{Bucket: info.Bucket, Name: name, Size: int64(info.Size), Digest: info.Digest}
		size := len(data)
		want := fleettest.BigUnread(fleettest.MailRecords(n))
		data = nil
		mb := float64(size) / (1 << 20)
		for _, prog := range []struct{ name, src string }{
			{"ptc-def", `(def mail (tool/search_mail {})) (count (filter (fn [m] (and (:unread m) (> (:size m) 1500))) mail))`},
			{"ptc", `(count (filter (fn [m] (and (:unread m) (> (:size m) 1500))) (tool/search_mail {})))`},
		} {
			b.Run(fmt.Sprintf("%s/%dMiB", prog.name, mib), func(b *testing.B) {
				tools := lisp.Tools{"search_mail": lisp.ToolFunc(func(ctx context.Context, _ map[string]any) (any, error) {
					obj, err := obs.Get(ctx, ref.Name)
					if err != nil {
						return nil, err
					}
					defer obj.Close()
					return lisp.DecodeWireResultFrom(ctx, "", obj, ref.Size, ref)
				})}
				src := prog.src
				var peak uint64
				b.SetBytes(int64(size))
				for b.Loop() {
					step, err := lisp.Run(ctx, src, lisp.Options{Tools: tools, Limits: messages.Limits{ProgramMemory: -1, ProgramTimeout: 10 * time.Minute}})
					if err != nil || step.Fail != nil || step.Return != want {
						b.Fatalf("%v %+v %v", err, step.Fail, step.Return)
					}
					peak = max(peak, liveHeap())
					runtime.KeepAlive(step)
				}
				b.ReportMetric(float64(peak)/(1<<20)/mb, "heap/encoded")
				b.ReportMetric(float64(n), "records")
			})
		}
		b.Run(fmt.Sprintf("go/%dMiB", mib), func(b *testing.B) {
			var peak uint64
			b.SetBytes(int64(size))
			for b.Loop() {
				obj, err := obs.Get(ctx, ref.Name)
				if err != nil {
					b.Fatal(err)
				}
				raw, err := io.ReadAll(obj)
				obj.Close()
				if err != nil {
					b.Fatal(err)
				}
				var recs []any
				if err := messages.Unmarshal(raw, &recs); err != nil {
					b.Fatal(err)
				}
				raw = nil
				got := int64(0)
				for _, r := range recs {
					if m := r.(map[string]any); m["unread"] == true && m["size"].(int64) > 1500 {
						got++
					}
				}
				if got != want {
					b.Fatalf("got %d, want %d", got, want)
				}
				peak = max(peak, liveHeap())
				runtime.KeepAlive(recs)
			}
			b.ReportMetric(float64(peak)/(1<<20)/mb, "heap/encoded")
			b.ReportMetric(float64(n), "records")
		})
	}
}

// mailRecordsFor returns how many records of fleettest.MailRecords make
// size bytes of msgpack (their encoded size grows with the digits of
// their numbers, so it is measured on a sample as large as the result).
func mailRecordsFor(size int) (int, error) {
	n := size / 200
	for range 3 {
		data, err := messages.Marshal(fleettest.MailRecords(n))
		if err != nil {
			return 0, err
		}
		n = int(int64(n) * int64(size) / int64(len(data)))
	}
	return n, nil
}

// liveHeap returns the live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

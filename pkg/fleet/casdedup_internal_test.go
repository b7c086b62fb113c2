package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// kvKeyValid and validDedupKey accept exactly the keys of the regular
// expressions they replace: jetstream.KeyValue's own check and the KV
// key an idempotency key must fit in.
func TestKeyChecksMatchTheirRegexps(t *testing.T) {
	kvRE := regexp.MustCompile(`^[-/_=\.a-zA-Z0-9]+$`)
	kvValid := func(k string) bool {
		return k != "" && k[0] != '.' && k[len(k)-1] != '.' && !strings.Contains(k, "..") && kvRE.MatchString(k)
	}
	dedupRE := regexp.MustCompile(`^[-/_=.a-zA-Z0-9]{1,200}$`)
	keys := []string{"", ".", "a", "a.b", ".a", "a.", "a..b", "mission/approval/1.abc.0", "x=y_z-1/2",
		"a b", "a*", "a>", "é", "a\x00", strings.Repeat("k", 200), strings.Repeat("k", 201), "shop/refund/01J/approval/1.ab.0"}
	for c := 0; c < 128; c++ {
		keys = append(keys, "k"+string(rune(c))+"k", string(rune(c)))
	}
	for _, k := range keys {
		if got, want := kvKeyValid(k), kvValid(k); got != want {
			t.Errorf("kvKeyValid(%q) = %v, the KV's check %v", k, got, want)
		}
		if got, want := validDedupKey(k), dedupRE.MatchString(k); got != want {
			t.Errorf("validDedupKey(%q) = %v, the regexp %v", k, got, want)
		}
	}
}

// The dedup store claims a key with one compare-and-set publish and
// refuses a claimed one as the KV's Create does (ErrKeyExists); a key
// whose last entry is a delete marker is claimed again, as Create claims
// it; an outcome is written over the claim's revision only.
func TestDedupStoreWritesAsTheKV(t *testing.T) {
	nc := embeddedConn(t)
	d, err := openDedup(nc, "svc", DedupConfig{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if d.prefix != "$KV.tool_dedup." {
		t.Fatalf("prefix %q: the bucket's claims go through the KV", d.prefix)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rev, err := d.create(ctx, "svc/t/k1", []byte("claim"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.create(ctx, "svc/t/k1", []byte("again")); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("a second claim: %v, want ErrKeyExists", err)
	}
	if _, err := d.update(ctx, "svc/t/k1", []byte("out"), rev+1); !errors.Is(err, jetstream.ErrKeyRevisionMismatch) || !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("an outcome over another revision: %v", err)
	}
	if _, err := d.update(ctx, "svc/t/k1", []byte("out"), rev); err != nil {
		t.Fatal(err)
	}
	if e, err := d.kv.Get(ctx, "svc/t/k1"); err != nil || string(e.Value()) != "out" {
		t.Fatalf("stored %v, %v", e, err)
	}
	if err := d.kv.Delete(ctx, "svc/t/k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.create(ctx, "svc/t/k1", []byte("claim")); err != nil {
		t.Fatalf("claiming a deleted key: %v", err)
	}
	if e, err := d.kv.Get(ctx, "svc/t/k1"); err != nil || string(e.Value()) != "claim" {
		t.Fatalf("stored %v, %v", e, err)
	}
	if _, err := d.create(ctx, "no spaces", []byte("x")); !errors.Is(err, jetstream.ErrInvalidKey) {
		t.Fatalf("an invalid key: %v", err)
	}
}

// The bodies of message reads are the bytes encoding/json writes for
// them, written without it: a batch direct get of approval records (the
// decider's and the gate's, on every resumption) costs its body alone,
// one allocation, where encoding/json's made three.
func TestMessageReadRequestsAsEncodingJSON(t *testing.T) {
	subjects := []string{"$KV.mission_approvals.01J.>", "a.b", "", "x<y>&z", "q\"\\\n\x01", "é\u2028", "bad\xff"}
	for _, s := range subjects {
		checkMultiLast(t, []string{s})
		for _, q := range []msgQuery{lastOn(s), atSeq(7, s), atSeq(1<<60, s)} {
			checkMsgQuery(t, q)
		}
	}
	for _, filters := range [][]string{nil, subjects, subjects[:2], {"a.*", "b.>", "c"}} {
		checkMultiLast(t, filters)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = multiLastRequest("$KV.mission_approvals.01JB0000000000000000000000.>") }); n > 1 {
		t.Errorf("a batch direct get's body costs %.0f allocations, want 1", n)
	}
}

// checkMultiLast fails tb unless the body of the batch direct get of
// filters is what encoding/json writes for it.
func checkMultiLast(tb testing.TB, filters []string) {
	tb.Helper()
	got, err := multiLastRequest(filters...)
	want, _ := json.Marshal(struct {
		MultiLast []string `json:"multi_last"`
	}{filters})
	if filters == nil {
		want = []byte(`{"multi_last":[]}`)
	}
	if err != nil || string(got) != string(want) {
		tb.Errorf("multi_last %q: %s %v, want %s", filters, got, err, want)
	}
}

// checkMsgQuery fails tb unless q's request body is what encoding/json
// writes for it, or, for a query naming neither subject nor sequence,
// an error.
func checkMsgQuery(tb testing.TB, q msgQuery) {
	tb.Helper()
	got, err := q.request()
	if q.seq == 0 && q.subject == "" {
		if err == nil {
			tb.Errorf("%v: an empty query made %s", q, got)
		}
		return
	}
	want, _ := json.Marshal(struct {
		Seq        uint64 `json:"seq,omitempty"`
		LastBySubj string `json:"last_by_subj,omitempty"`
		NextBySubj string `json:"next_by_subj,omitempty"`
	}{Seq: q.seq, LastBySubj: q.lastSubject(), NextBySubj: q.nextSubject()})
	if err != nil || string(got) != string(want) {
		tb.Errorf("%v: %s %v, want %s", q, got, err, want)
	}
}

// FuzzMessageReadRequests: the bodies of message reads, written by hand,
// are the bytes encoding/json writes for the same requests, for any
// subjects (invalid UTF-8, escapes, wildcards) and sequence.
func FuzzMessageReadRequests(f *testing.F) {
	f.Add("$KV.mission_approvals.01J.>", "a.b", uint64(0))
	f.Add("x<y>&z", "q\"\\\n\x01", uint64(7))
	f.Add("é\u2028", "bad\xff", uint64(1<<60))
	f.Fuzz(func(t *testing.T, a, b string, seq uint64) {
		checkMultiLast(t, []string{a})
		checkMultiLast(t, []string{a, b})
		for _, q := range []msgQuery{lastOn(a), atSeq(seq, a), atSeq(seq, "")} {
			checkMsgQuery(t, q)
		}
	})
}

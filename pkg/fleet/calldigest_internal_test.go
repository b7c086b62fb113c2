package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// marshalDigest is callDigest as json.Marshal and a streaming hash make
// it: the digests journal keys and approvals already hold.
func marshalDigest(tool string, args any) string {
	b, err := json.Marshal(args)
	if err != nil {
		b = []byte(fmt.Sprintf("%#v", args))
	}
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// A call's digest is the one json.Marshal's bytes give, for arguments of
// every kind (HTML characters escaped, keys sorted, nested values, a
// value JSON cannot encode, a large one), whatever buffer it is written
// in; and it costs fewer allocations than json.Marshal and a streaming
// hash made.
func TestCallDigest(t *testing.T) {
	for _, tc := range []struct {
		tool string
		args any
	}{
		{"echo", map[string]any{"x": int64(1)}},
		{"work", nil},
		{"find", map[string]any{"q": "<a href=\"x\">&</a>", "b": []any{int64(1), 2.5, true, nil}, "a": map[string]any{"z": "é", "y": "\u2028"}}},
		{"bad", map[string]any{"f": func() {}}},
		{"big", map[string]any{"s": strings.Repeat("x", 40<<10)}},
		{"", map[string]any{}},
		{"echo", map[string]any{"x": int64(2)}},
		{"scalars", map[string]any{"n": nil, "t": true, "i": int64(-3), "s": "<é\u2028&>", "bad": "\xff"}},
		{"scalars", map[string]any{"n": nil, "t": false, "i": int64(9), "s": "plain", "k\u00e9y": "v"}},
		{"nil map", map[string]any(nil)},
	} {
		if got, want := callDigest(tc.tool, tc.args), marshalDigest(tc.tool, tc.args); got != want {
			t.Errorf("%s %v: digest %s, want %s", tc.tool, tc.args, got, want)
		}
	}
	args := map[string]any{"id": int64(7), "region": "eu"}
	now := testing.AllocsPerRun(100, func() { callDigest("crm.lookup", args) })
	before := testing.AllocsPerRun(100, func() { marshalDigest("crm.lookup", args) })
	t.Logf("%.0f allocations a digest, %.0f made by json.Marshal and a streaming hash", now, before)
	// the digest's string alone: arguments of scalars are written
	// without encoding/json (6 through its encoder)
	if !raceOn && now > 1 {
		t.Errorf("%.0f allocations a digest, want at most 1", now)
	}
	nested := map[string]any{"id": int64(7), "tags": []any{"a"}, "score": 2.5}
	now = testing.AllocsPerRun(100, func() { callDigest("crm.lookup", nested) })
	before = testing.AllocsPerRun(100, func() { marshalDigest("crm.lookup", nested) })
	// the copy json.Marshal returns and the hash's sum: 2 fewer
	if !raceOn && now > before-2 {
		t.Errorf("%.0f allocations a digest of nested arguments, want at most %.0f", now, before-2)
	}
}

// A call's occurrence counts the calls of its turn and content: the
// same content in another turn, or other content in the same turn, starts
// at 1. Counting a call seen before makes no key.
func TestCallOccurrence(t *testing.T) {
	b := &Toolbox{}
	a, c := callDigest("echo", map[string]any{"x": int64(1)}), callDigest("echo", map[string]any{"x": int64(2)})
	for _, tc := range []struct {
		turn   int
		digest string
		want   int
	}{{1, a, 1}, {1, a, 2}, {1, c, 1}, {2, a, 1}, {12, a, 1}, {1, a, 3}, {2, c, 1}} {
		if got := b.callOccurrence(tc.turn, tc.digest); got != tc.want {
			t.Errorf("turn %d %s: occurrence %d, want %d", tc.turn, tc.digest, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { b.callOccurrence(12, a) }); n != 0 {
		t.Errorf("%.0f allocations counting a call seen before, want 0", n)
	}
}

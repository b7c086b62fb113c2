package agent

import (
	"testing"
)

// TestSecretsFirstRecordAllocations: the first secret a run records
// makes its three prefix indexes in one small allocation (a bit a byte
// value marks the strings' first bytes), and scrubbing finds it.
func TestSecretsFirstRecordAllocations(t *testing.T) {
	record := func() *secrets {
		s := &secrets{}
		s.add("alice@example.com")
		return s
	}
	if got := record().scrub("mail alice@example.com now"); got != "mail "+firewalledText+" now" {
		t.Fatalf("scrubbed: %q", got)
	}
	if raceEnabled {
		t.Skip("the race detector changes what escapes")
	}
	allocs, bytes := memPerRun(200, func() { record() })
	t.Logf("first secret recorded: %.1f allocations and %.0f bytes", allocs, bytes)
	// 10 allocations and 1,344 bytes on amd64: the secrets, its set, the
	// indexes, the starts and the strings' index maps and group (whose
	// first string and length it holds itself, as the index holds its
	// first dirty group: 13 and 1,372 with the three slices made apart);
	// three indexes each of its own, with a 256-byte table of first bytes,
	// made 15 and 2,080
	if allocs > 10 || bytes > 1500 {
		t.Errorf("first secret recorded: %.1f allocations and %.0f bytes, want at most 10 and 1500", allocs, bytes)
	}
}

// TestSecretsHookMadeOnce: a run's printers ask for the scrub hook
// several times; it is made once and hides what redact hides.
func TestSecretsHookMadeOnce(t *testing.T) {
	s := &secrets{}
	s.add("alice@example.com")
	h := s.hook()
	if got, want := h("alice@example.com", false), s.redact("alice@example.com", false); got != want {
		t.Errorf("hook: %q, redact: %q", got, want)
	}
	if (*secrets)(nil).hook() != nil {
		t.Error("a nil secrets has a hook")
	}
	if raceEnabled {
		t.Skip("the race detector changes what escapes")
	}
	// kept, as the printers' options keep it
	var kept func(string, bool) string
	if n := testing.AllocsPerRun(100, func() { kept = s.hook() }); n != 0 {
		t.Errorf("hook: %v allocations, want 0", n)
	}
	_ = kept
}

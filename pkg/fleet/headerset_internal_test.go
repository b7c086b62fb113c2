package fleet

import (
	"testing"

	"github.com/nats-io/nats.go"
)

// headerSetter's values share one array, yet each header keeps its own:
// an Add to one leaves the next alone.
func TestHeaderSetterKeepsEachValueApart(t *testing.T) {
	h := nats.Header{}
	s := headerSetter{h: h, vals: make([]string, 0, 2)}
	s.set("A", "1")
	s.set("B", "2")
	s.set("C", "3") // past the array's capacity
	h.Add("A", "1b")
	if got := h.Values("A"); len(got) != 2 || got[0] != "1" || got[1] != "1b" {
		t.Errorf("A = %q", got)
	}
	if h.Get("B") != "2" || h.Get("C") != "3" {
		t.Errorf("B = %q, C = %q, want 2 and 3", h.Get("B"), h.Get("C"))
	}
}

package fleet_test

import (
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/fleet"
)

// A value over 1 KiB is cut to a preview people read: its JSON form with
// "<", ">" and "&" as they are (a masked value reads "<Firewalled>"),
// cut on a character boundary, with the encoded size.
func TestCutValuePreviewReadsAsWritten(t *testing.T) {
	if _, ok := fleet.CutValue(map[string]any{"a": "small"}); ok {
		t.Fatal("a small value was cut")
	}
	rows := make([]any, 60)
	for i := range rows {
		rows[i] = map[string]any{"_phone": "<Firewalled>", "note": "fish & chips ★"}
	}
	c, ok := fleet.CutValue(rows)
	if !ok {
		t.Fatal("a large value was not cut")
	}
	p, _ := c["preview"].(string)
	if !strings.HasPrefix(p, `[{"_phone":"<Firewalled>","note":"fish & chips ★"},`) || !strings.HasSuffix(p, "…") {
		t.Errorf("preview: %q", p)
	}
	if len(p) > 1024+len("…") {
		t.Errorf("preview of %d bytes", len(p))
	}
	if n, _ := c["bytes"].(int64); n < 2000 {
		t.Errorf("bytes: %v", c["bytes"])
	}
}

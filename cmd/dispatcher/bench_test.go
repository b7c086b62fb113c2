package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestBenchContextCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"bench", "-scales", "1", "context"}, testEnv(nil), &out, &errOut); err != nil {
		t.Fatalf("bench: %v\n%s", err, errOut.String())
	}
	got := out.String()
	for _, want := range []string{"prompt tokens", "o200k_base", "triage-emails", "order-totals", "join-customers-orders", "5000", "ptc", "text"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "%"); n != 3 {
		t.Errorf("%d savings figures, want one per mission:\n%s", n, got)
	}
	err := run(context.Background(), []string{"bench", "-scales", "0", "context"}, testEnv(nil), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "-scales") {
		t.Errorf("bad scale: %v", err)
	}
}

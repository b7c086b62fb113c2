package llm_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

func TestSecretNeverPrints(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	s := llm.Secret(key)
	type cfg struct {
		Name string
		Key  llm.Secret
	}
	c := cfg{Name: "x", Key: s}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := s.MarshalText()
	outputs := []string{
		s.String(), s.GoString(), string(js), string(txt),
		fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q %x %X %d %10s", s, s, s, s, s, s, s, s, s),
		fmt.Sprintf("%v %+v %#v", c, c, c), fmt.Sprintf("%v", &c), fmt.Sprintf("%v", []llm.Secret{s}),
		fmt.Sprintf("%v", map[string]llm.Secret{"k": s}),
	}
	for _, out := range outputs {
		if strings.Contains(out, key) || strings.Contains(out, "0123456789") || strings.Contains(out, fmt.Sprintf("%x", key)) {
			t.Errorf("secret leaked: %s", out)
		}
	}
	if !strings.Contains(string(js), `"Key":"[redacted]"`) {
		t.Errorf("json = %s", js)
	}
	if s.Reveal() != key {
		t.Error("Reveal must return the value")
	}
	if llm.Secret("").String() != "" {
		t.Error("an empty secret prints empty")
	}
}

func TestSecretScrub(t *testing.T) {
	s := llm.Secret("sk-abcdef123")
	got := s.Scrub("Incorrect API key provided: sk-abcdef123. sk-abcdef123")
	if strings.Contains(got, "sk-abcdef123") || strings.Count(got, "[redacted]") != 2 {
		t.Errorf("Scrub = %q", got)
	}
	if llm.Secret("ab").Scrub("a bab") != "a bab" {
		t.Error("a too-short secret must not mangle text")
	}
}

package ctxbench

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent"
)

// TestDocsStateSystemPromptSizes checks the system prompt sizes the docs
// state against the prompts agent.PreviewPrompt renders for each language
// reference preset, counted with o200k_base: a stated figure more than 5%
// off fails, so the docs follow the prompt as it changes.
func TestDocsStateSystemPromptSizes(t *testing.T) {
	enc, err := encoding()
	if err != nil {
		t.Fatal(err)
	}
	measured := map[string]int{}
	for _, preset := range agent.LanguagePresets() {
		a, err := agent.New(agent.Spec{Prompt: "Count the orders.", SystemPrompt: agent.SystemPrompt{LanguageSpec: preset}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := agent.PreviewPrompt(a, nil)
		if err != nil {
			t.Fatal(err)
		}
		if measured[preset], err = enc.Count(p.System); err != nil {
			t.Fatal(err)
		}
	}
	claims := []struct {
		file, preset string
		re           *regexp.Regexp
	}{
		{"agent.md", "default", regexp.MustCompile(`language_spec: default\x60; with it the system prompt is about ([\d,]+) tokens`)},
		{"llm.md", "default", regexp.MustCompile(`compact default system prompt \(about ([\d,]+) tokens\)`)},
		{"workbench.md", "full", regexp.MustCompile(`language_spec: full\x60: every form\s+and builtin, with examples\) makes the system prompt about ([\d,]+) tokens`)},
	}
	for _, c := range claims {
		raw, err := os.ReadFile(filepath.Join("..", "..", "docs", c.file))
		if err != nil {
			t.Fatal(err)
		}
		m := c.re.FindSubmatch(raw)
		if m == nil {
			t.Errorf("docs/%s: no statement matching %q", c.file, c.re)
			continue
		}
		stated, _ := strconv.Atoi(strings.ReplaceAll(string(m[1]), ",", ""))
		got := measured[c.preset]
		if d := float64(stated-got) / float64(got); d > 0.05 || d < -0.05 {
			t.Errorf("docs/%s states about %d tokens for the %q system prompt; it is %d", c.file, stated, c.preset, got)
		}
	}
}

package missionfile

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: any input parses into a file or fails with an error; it never
// panics, and a parsed agent mission has a prompt.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob("../../examples/missions/*.yaml")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"agent": {"prompt": "p", "sub_agents": {"a": {"prompt": "q"}}}, "context": {"k": [1, 2.5, "s", null]}}`))
	f.Add([]byte("agent: &a {prompt: x}\ncontext: {a: *a, b: [*a, *a]}"))
	f.Add([]byte("compiled: {program: '(fn [m] m)', inputs: [{x: 1}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mf, err := Parse(data)
		if err != nil {
			return
		}
		if mf.Agent != nil && mf.Agent.Prompt == "" {
			t.Fatal("agent without a prompt accepted")
		}
		_, _ = mf.Build()
	})
}

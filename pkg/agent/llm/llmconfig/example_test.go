package llmconfig_test

import (
	"fmt"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmconfig"
)

// A worker builds its registry from its environment: one PTC_MODEL_<NAME>
// variable per model, keys in the providers' usual variables. main passes
// os.Environ() and os.Getenv; the example uses a fixed environment.
func ExampleRegistryFromEnv() {
	environ := []string{
		"PTC_MODEL_HAIKU=anthropic:claude-haiku-4-5",
		"PTC_MODEL_LOCAL=openai:qwen2.5-coder@http://localhost:8000/v1",
		"ANTHROPIC_API_KEY=sk-ant-example",
	}
	reg, err := llmconfig.RegistryFromEnv(environ, llmconfig.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range reg.Names() {
		m, _ := reg.Lookup(name)
		fmt.Printf("%s -> %v\n", name, m)
	}
	// Output:
	// haiku -> anthropic:claude-haiku-4-5@https://api.anthropic.com/v1/messages
	// local -> openai:qwen2.5-coder@http://localhost:8000/v1/chat/completions
}

// A missing key is reported by variable name, never by value.
func ExampleNewModel() {
	_, err := llmconfig.NewModel("openai:gpt-4.1-mini", llmconfig.Options{Getenv: func(string) string { return "" }})
	fmt.Println(err)
	// Output: invalid_llm_config: model spec "openai:gpt-4.1-mini": environment variable OPENAI_API_KEY is not set
}

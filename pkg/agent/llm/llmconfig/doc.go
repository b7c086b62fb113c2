// Package llmconfig names models in configuration, without code: a spec
// string such as "anthropic:claude-sonnet-4-5" becomes an llm.Model, and a
// worker's environment (PTC_MODEL_<NAME>=<spec>) becomes an llm.Registry.
//
// # Spec syntax
//
//	spec     = provider ":" model [ "@" base-url ] { ";" param }
//	param    = "key_env=" VAR | "max_tokens=" N | "version=" V
//	         | "stream_usage=false" | "header." NAME "=" VALUE
//	         | "price_in=" USD | "price_out=" USD
//	         | "price_cache_read=" USD | "price_cache_write=" USD
//
// Examples:
//
//	openai:gpt-4.1-mini
//	openai-responses:gpt-5-codex
//	anthropic:claude-sonnet-4-5;max_tokens=8192
//	anthropic:claude-sonnet-4-5;price_in=3;price_out=15;price_cache_read=0.3;price_cache_write=3.75
//	openrouter:anthropic/claude-sonnet-4.5
//	ollama:llama3.2:3b
//	openai:qwen2.5-coder@http://localhost:8000/v1;key_env=VLLM_KEY
//	openai:llama3@http://localhost:11434/v1
//
// The provider is everything before the first ':' (openai, anthropic,
// openrouter, ollama); the model is the rest up to "@http://" or
// "@https://" (so Ollama tags like "llama3.2:3b" and OpenRouter names like
// "anthropic/claude-sonnet-4.5" work); the base URL runs up to the first
// ';'. openrouter and ollama are OpenAI-compatible presets
// (https://openrouter.ai/api/v1, http://localhost:11434/v1).
//
// Specs are checked when read, and errors show the accepted forms: a base
// URL without a scheme ("openai:qwen@localhost:8000/v1"), an Azure
// deployment URL or any URL with a query, one that already ends with the
// path the client appends, and another provider's hosted endpoint
// (anthropic: at api.openai.com) are refused, as are parameters the
// provider does not take.
//
// # Prices
//
// price_in, price_out, price_cache_read and price_cache_write (US dollars
// per million tokens, any provider) wrap the model with llm.WithPrices, so
// that each answer's Usage.CostUSD estimates its cost.
//
// # Adding a provider
//
// A provider is one entry of the providers table in llmconfig.go: its
// default base URL and key variable, the wire API it speaks, the path its
// client appends, the spec parameters it takes and the function building
// its client. A new wire API also needs its client package under
// pkg/agent/llm (built on internal/httpx.Endpoint, which holds Complete
// and Stream for every provider).
//
// # Keys
//
// API keys never appear in a spec. They are read through an injected getenv
// (the library never calls os.Getenv): OPENAI_API_KEY, ANTHROPIC_API_KEY or
// OPENROUTER_API_KEY for the presets' own base URLs, or the variable named
// by key_env. A key is required for the hosted default base URLs. A spec
// that overrides the base URL sends a key only when it names the variable
// with key_env (the provider's default key is never sent to another URL);
// a key_env that is named must be set. Keys are held as llm.Secret, so neither errors nor the models'
// printed forms show them; header values are printed redacted too.
//
// Retries are not added here: the agent wraps models in its llm_retry
// policy (llm.WithRetry), so wrapping twice would multiply attempts.
package llmconfig

// Package openai is an llm.Model for the OpenAI chat-completions API and
// the servers that speak it: OpenAI, OpenRouter, vLLM, Ollama and the
// llama.cpp server. It uses net/http and encoding/json only.
//
// The client translates llm messages at the edge: the system prompt becomes
// a "system" message, tool results become "tool" messages (sent before any
// text of the same user turn), assistant tool calls become "tool_calls" with
// JSON-string arguments, and llm.ToolSpec becomes a "function" tool. The
// request's Opts (llm_opts) are copied into the body as top-level fields
// (temperature, max_tokens or max_completion_tokens, top_p, seed, ...); the
// keys the client sets itself are refused. Request.CacheKey goes out as
// prompt_cache_key (unless llm_opts set one), on chat completions and the
// Responses API alike.
//
// Usage: prompt_tokens become InputTokens (they include the cached ones),
// completion_tokens OutputTokens, prompt_tokens_details.cached_tokens
// CacheReadTokens. Finish reasons are normalised (stop → end_turn,
// tool_calls → tool_use, length → max_tokens, content_filter → refusal).
//
// Errors are *llm.ProviderError: 408, 409, 429 and 5xx are retryable and
// carry Retry-After; other statuses carry the provider's message and are
// not. Tool-call arguments that are not a JSON object fail with type
// "invalid_tool_call". The API key is sent as a Bearer token and never
// appears in errors or in the client's printed form.
//
// A Client is safe for concurrent use. Streaming (Stream) sends
// stream_options.include_usage so the last chunk carries token counts,
// unless Config.NoStreamUsage is set for servers that reject it.
package openai

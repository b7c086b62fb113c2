// Package anthropic is an llm.Model for the Anthropic Messages API
// (POST /v1/messages). It uses net/http and encoding/json only.
//
// Translation at the edge: Request.System becomes the top-level "system"
// field — a single text block with cache_control {"type": "ephemeral"}
// when Request.CacheSystem is set (the last tool gets one too), so the
// stable prefix is cached across turns and missions; with
// Request.CacheHistory the last block of the last message gets one, so the
// next turn reads the conversation so far from the cache; a text block
// with llm.Text.Cache set gets one too; messages become content-block arrays (text, tool_use,
// tool_result with is_error); llm.ToolSpec becomes a tool with
// input_schema. max_tokens is required by the API: it comes from the
// request's Opts when given, else Config.MaxTokens (default 4096). Other
// Opts (temperature, top_p, top_k, stop_sequences, metadata, ...) are copied
// into the body as top-level fields.
//
// Usage: Anthropic's input_tokens counts only the uncached part of the
// prompt, so InputTokens is input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens (the whole prompt, as for other providers);
// CacheWriteTokens and CacheReadTokens break the cached part out. Stop
// reasons are passed through (end_turn, tool_use, max_tokens,
// stop_sequence, refusal, pause_turn). Thinking blocks are skipped.
//
// Errors are *llm.ProviderError carrying the error type
// (invalid_request_error, rate_limit_error, overloaded_error, ...), the
// message and the request id. 408, 409, 429, 5xx and 529 are retryable and
// carry Retry-After; an x-should-retry header overrides the verdict. Error
// events inside a stream (overloaded_error, api_error) are reported by the
// stream. The key is sent in x-api-key and never printed.
//
// A Client is safe for concurrent use.
package anthropic

// Package llm is the model interface of the agent loop: the messages we own,
// the one-method Model interface, streaming, a registry of models by name,
// retries for infrastructure errors, and the provider error type.
//
// # Contract
//
//   - We own the messages. A [Message] is a [Role] plus a list of [Block]s; the
//     block set is sealed: [Text], [ToolUse] and [ToolResult]. Provider packages
//     (llm/openai, llm/anthropic) translate to and from their wire formats at the
//     edge; nothing above this package sees a provider type.
//   - [Model] has one method, Complete. [Func] adapts a closure. A model that can
//     stream also implements [Streamer]; [Collect] turns a [Stream] into the same
//     [Response] Complete returns, so callers may use either.
//   - Token counts in [Usage] are optional: zero means unknown.
//   - [Registry] maps names to models. Lookups fail with an [*Error] whose
//     [Error.Reason] is llm_not_found, invalid_llm or llm_registry_required and
//     whose message is the one the specification gives, so the agent can put it
//     into a Step's Fail unchanged.
//   - [WithRetry] wraps a Model in a [RetryPolicy]. Only infrastructure errors
//     are retried (rate limits, overload, 5xx, 408/409, timeouts, connection
//     failures; see [Classify]); logic errors are returned at once, because the
//     agent loop spends turns, not retries, on them. Retry-After is honoured,
//     delays are jittered and capped, and no retry starts past the context's
//     deadline. The sleep is injectable.
//   - [*ProviderError] is what provider clients return for HTTP and transport
//     failures; it carries the status, the provider's error type and message, the
//     request id and whether a retry may help. Secrets never appear in it.
//   - [Secret] holds an API key and prints as [redacted] in every fmt verb, in
//     JSON and in text encodings.
//
// Everything in this package is safe for concurrent use unless a type's
// documentation says otherwise; Request and Response values are plain data
// owned by whoever holds them.
//
// The package imports nothing else of this module.
package llm

// Package httpx holds the HTTP plumbing the provider clients share: sending
// a JSON request, turning transport failures and non-2xx answers into
// *llm.ProviderError (retryable or not, with Retry-After), and reading
// bodies with a size limit. It is internal to the provider clients.
package httpx

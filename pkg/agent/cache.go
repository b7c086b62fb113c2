package agent

// cacheKey names the agent's requests for providers that route prompt
// caching by a key (OpenAI prompt_cache_key): every mission of the agent
// starts with the same system prompt and tool list.
func (a *Agent) cacheKey() string { return a.cacheKeyText }

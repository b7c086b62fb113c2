// Package llmtest provides a scripted llm.Model for tests: a list of
// replies (text, tool calls, token counts, errors, computed replies or a
// hang until the context ends) answered in order. The model records a deep
// copy of every request it receives, can check each request with an
// assertion func, and fails clearly (ErrExhausted) when the script runs out.
//
// A scripted Model is safe for concurrent use: replies are handed out in
// the order calls arrive. It never sleeps or touches the network, so loop
// tests built on it are instant and deterministic.
package llmtest

// Package sse reads server-sent events (the text/event-stream format) as
// the LLM providers send them: "event:" and "data:" fields, events ended by
// a blank line, comment lines starting with ':' ignored, LF or CRLF line
// ends. It is internal to the provider clients.
package sse

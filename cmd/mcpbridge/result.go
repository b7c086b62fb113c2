package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// convertResult turns an MCP tool result into the fleet tool's result:
//
//   - isError: a tool error (code tool_error) whose message is the result's
//     text, so the model can read what went wrong;
//   - structuredContent: that value, as data;
//   - one text content: the parsed value when the text is JSON, else the
//     string;
//   - several contents: a list with one entry per content, each converted
//     as above (non-text contents as their MCP JSON form: type, mimeType,
//     data, ...).
//
// Numbers become int64 when they are integers that fit, else float64
// (messages.JSONNumbers).
func convertResult(res *mcp.CallToolResult) (any, error) {
	if res == nil {
		return nil, nil
	}
	if res.IsError {
		msg := strings.TrimSpace(contentText(res.Content))
		if msg == "" {
			msg = "the tool reported an error without a message"
		}
		return nil, &messages.ToolError{Code: messages.ToolErrFailed, Message: msg}
	}
	if res.StructuredContent != nil {
		return plainJSON(res.StructuredContent)
	}
	switch len(res.Content) {
	case 0:
		return nil, nil
	case 1:
		return convertContent(res.Content[0])
	}
	out := make([]any, 0, len(res.Content))
	for _, c := range res.Content {
		v, err := convertContent(c)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func convertContent(c mcp.Content) (any, error) {
	if t, ok := c.(*mcp.TextContent); ok {
		return textValue(t.Text), nil
	}
	return plainJSON(c)
}

// textValue parses text that is one JSON value (a quoted string gives the
// string inside); anything else stays the string it is.
func textValue(text string) any {
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		return text
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return text
	}
	plain, err := messages.JSONNumbers(v)
	if err != nil {
		return text
	}
	return plain
}

// plainJSON converts a value through its JSON form to plain data.
func plainJSON(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, &messages.ToolError{Code: messages.ToolErrInternal, Message: fmt.Sprintf("result: %v", err)}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, &messages.ToolError{Code: messages.ToolErrInternal, Message: fmt.Sprintf("result: %v", err)}
	}
	return messages.JSONNumbers(out)
}

func contentText(cs []mcp.Content) string {
	var b strings.Builder
	for _, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

package llm

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// Role is the author of a message: RoleUser or RoleAssistant. The system
// prompt is not a message; it travels in Request.System.
type Role string

// The roles of a conversation.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of the conversation: a role and its content blocks.
// The zero value is an empty message with no role.
//
// Tool results are sent back in a user message (as the Anthropic API does);
// provider clients split them out where the wire format wants separate
// messages (OpenAI's "tool" role).
type Message struct {
	Role    Role
	Content []Block
}

// Block is one piece of message content. The set is sealed: the only
// implementations are Text, ToolUse, ToolResult and ProviderBlock.
type Block interface {
	isBlock()
}

// Text is a block of plain text.
type Text struct {
	Text string
	// Cache asks the provider to cache the prompt up to and including this
	// block (an Anthropic cache_control breakpoint), for a prefix that the
	// next requests repeat although the message it is in changes.
	// Providers that cache prefixes automatically ignore it.
	Cache bool
}

// ToolUse is a tool call requested by the model (native tool calling). ID is
// the provider's call id, which the matching ToolResult refers to; Input holds
// the decoded JSON arguments (never nil in values produced by this module).
type ToolUse struct {
	ID    string
	Name  string
	Input map[string]any
}

// ToolResult answers a ToolUse. Content is the result as text (usually JSON);
// IsError marks a failed call so the model can recover.
type ToolResult struct {
	ToolUseID string
	Content   string
	IsError   bool
}

// ProviderBlock is content of one provider that the loop does not
// interpret, carried through the conversation unchanged and sent back only
// to that provider: Anthropic's thinking and redacted_thinking blocks with
// their signatures (which the API requires back in a tool-use loop). Raw is
// the block exactly as the provider sent it.
type ProviderBlock struct {
	Provider string
	Type     string
	Raw      json.RawMessage
}

func (Text) isBlock()          {}
func (ToolUse) isBlock()       {}
func (ToolResult) isBlock()    {}
func (ProviderBlock) isBlock() {}

// UserText returns a user message holding one text block.
func UserText(text string) Message {
	return Message{Role: RoleUser, Content: []Block{Text{Text: text}}}
}

// AssistantText returns an assistant message holding one text block.
func AssistantText(text string) Message {
	return Message{Role: RoleAssistant, Content: []Block{Text{Text: text}}}
}

// ToolResults returns a user message carrying the given tool results.
func ToolResults(results ...ToolResult) Message {
	blocks := make([]Block, len(results))
	for i, r := range results {
		blocks[i] = r
	}
	return Message{Role: RoleUser, Content: blocks}
}

// Text returns the concatenation of the message's text blocks (tool blocks
// are skipped).
func (m Message) Text() string {
	var b strings.Builder
	for _, blk := range m.Content {
		if t, ok := blk.(Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// ToolUses returns the message's tool-use blocks in order.
func (m Message) ToolUses() []ToolUse {
	var out []ToolUse
	for _, blk := range m.Content {
		if u, ok := blk.(ToolUse); ok {
			out = append(out, u)
		}
	}
	return out
}

// Clone returns a deep copy of m: block slices, tool inputs and any nested
// maps and slices inside them are copied, so the copy shares no mutable state
// with m.
func (m Message) Clone() Message {
	out := Message{Role: m.Role}
	if m.Content != nil {
		out.Content = make([]Block, len(m.Content))
		for i, blk := range m.Content {
			switch b := blk.(type) {
			case ToolUse:
				b.Input = CloneMap(b.Input)
				blk = b
			case ProviderBlock:
				b.Raw = slices.Clone(b.Raw)
				blk = b
			}
			out.Content[i] = blk
		}
	}
	return out
}

// CloneMap deep-copies a JSON-like map: nested map[string]any and []any
// values are copied; other values are copied by assignment. A nil map stays
// nil.
func CloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return CloneMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case []string:
		return append([]string(nil), x...)
	case map[string]string:
		return maps.Clone(x)
	default:
		return v
	}
}

package agent

import "context"

// SubAgentCall identifies one call of a sub-agent tool: the context of the
// child's run (its model requests and tool calls) carries it, so a model
// or tool that answers several agents of one tree (a replay of a
// recorded mission) can tell which call it serves. Each call has its own
// *SubAgentCall, also when two calls have the same arguments.
type SubAgentCall struct {
	// Parent is the call of the sub-agent that made this call; nil when
	// the top-level agent made it.
	Parent *SubAgentCall
	// Tool is the sub-agent's tool name; Args are the call's arguments
	// after validation, as the trace records them.
	Tool string
	Args map[string]any
}

type subCallKey struct{}

// SubAgentCallFrom returns the sub-agent call whose run ctx belongs to,
// or nil in the top-level agent's run.
func SubAgentCallFrom(ctx context.Context) *SubAgentCall {
	c, _ := ctx.Value(subCallKey{}).(*SubAgentCall)
	return c
}

func withSubAgentCall(ctx context.Context, tool string, args map[string]any) context.Context {
	return context.WithValue(ctx, subCallKey{}, &SubAgentCall{Parent: SubAgentCallFrom(ctx), Tool: tool, Args: args})
}

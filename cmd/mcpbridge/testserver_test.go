package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverEnv makes the test binary act as an MCP stdio server (TestMain).
const serverEnv = "PTC_MCPBRIDGE_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "stdio" {
		if err := newTestServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "test MCP server:", err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type addIn struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum int `json:"sum"`
}

type sizeIn struct {
	Bytes int `json:"bytes"`
}

// newTestServer is the MCP server the tests bridge, built with the Go SDK.
func newTestServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "0.0.1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "adds two integers"},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	text := func(t string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t}}}
	}
	object := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "greet", Description: "says hello", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("hello, world"), nil
		})
	s.AddTool(&mcp.Tool{Name: "orders", Description: "lists orders as JSON text", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(`{"orders":[{"id":1,"total":9.5},{"id":2,"total":20},{"id":3,"total":4.25}],"big":9007199254740993}`), nil
		})
	s.AddTool(&mcp.Tool{Name: "lookup", Description: "fails for unknown customers", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := text("no customer with id 42; known ids are 1 to 10")
			r.IsError = true
			return r, nil
		})
	// Schemas the signature DSL cannot say: a union, a $ref, property
	// names with dashes (the whole input is then untyped).
	s.AddTool(&mcp.Tool{Name: "odd_union", Description: "takes a union", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"id":{"anyOf":[{"type":"integer"},{"type":"string"}]},"ref":{"$ref":"#/$defs/x"},"n":{"type":"integer"}},"required":["id","n"],"$defs":{"x":{"type":"string"}}}`)},
		echoArgs)
	s.AddTool(&mcp.Tool{Name: "odd_names", Description: "takes dashed names", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"file-path":{"type":"string"}},"required":["file-path"]}`)},
		echoArgs)
	s.AddTool(&mcp.Tool{Name: "blob", Description: "returns a text of the given size", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"bytes":{"type":"integer"}},"required":["bytes"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in sizeIn
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return text(strings.Repeat("a", in.Bytes)), nil
		})
	s.AddTool(&mcp.Tool{Name: "pid", Description: "the server's process id", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"pid": os.Getpid()}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "crash", Description: "exits the server process", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "grow", Description: "adds the tool late", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.AddTool(&mcp.Tool{Name: "late", Description: "added at run time", InputSchema: object},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text(`"late"`), nil })
			return text("grown"), nil
		})
	s.AddTool(&mcp.Tool{Name: "bad.name", Description: "a name fleet tools cannot have", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("renamed ok"), nil
		})
	return s
}

func echoArgs(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
}

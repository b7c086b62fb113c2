package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParseConfig(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret", "BIN": "/usr/bin"}
	getenv := func(k string) string { return env[k] }
	c, err := ParseConfig([]byte(`
servers:
  - name: files
    command: ["${BIN}/mcp-files", "--root", "/srv"]
    env: {API_TOKEN: "${TOKEN}"}
    tools:
      - {name: read.file, as: read_file}
      - {name: list}
    call_timeout: 5s
  - name: search
    url: https://mcp.example/mcp
    headers: {Authorization: "Bearer ${TOKEN}"}
`), getenv)
	if err != nil {
		t.Fatal(err)
	}
	files, search := c.Servers[0], c.Servers[1]
	if files.Command[0] != "/usr/bin/mcp-files" || files.Env["API_TOKEN"] != "s3cret" || files.CallTimeout != 5*time.Second {
		t.Errorf("files = %+v", files)
	}
	if files.Tools[0].exposed() != "read_file" || files.Tools[1].exposed() != "list" {
		t.Errorf("tools = %+v", files.Tools)
	}
	if search.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("search = %+v", search)
	}
}

func TestParseConfigErrors(t *testing.T) {
	getenv := func(string) string { return "" }
	for _, c := range []struct{ src, want string }{
		{`servers: []`, "servers: none configured"},
		{`servers: [{name: "a.b", url: "http://x"}]`, `servers[0].name: "a.b" is not a valid service name`},
		{`servers: [{name: a, url: "http://x"}, {name: a, url: "http://y"}]`, `servers[1].name: "a" configured twice`},
		{`servers: [{name: a}]`, "servers[0]: set command (stdio) or url (Streamable HTTP)"},
		{`servers: [{name: a, url: "http://x", command: [x]}]`, "servers[0]: command and url are both set"},
		{`servers: [{name: a, url: "ftp://x"}]`, `servers[0].url: "ftp://x" is not an http(s) URL`},
		{`servers: [{name: a, command: [x], tools: [{name: "x.y"}]}]`, `servers[0].tools[0]: "x.y" is not a valid fleet tool name`},
		{`servers: [{name: a, command: [x], tools: [{name: x}, {name: y, as: x}]}]`, `servers[0].tools[1]: tool name "x" exposed twice`},
		{`servers: [{name: a, url: "http://x", headers: {Authorization: "Bearer ${TOKEN}"}}]`, "servers[0].headers.Authorization: ${TOKEN} is not set"},
		{`servers: [{name: a, url: "http://x", colour: red}]`, "field colour not found"},
		{`servers: [{name: a, command: [x], headers: {A: b}}]`, "servers[0].headers: only for url servers"},
	} {
		_, err := ParseConfig([]byte(c.src), getenv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.src, err, c.want)
		}
	}
}

func TestLoadConfigBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte("# "+strings.Repeat("x", maxConfigBytes)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path, os.Getenv); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized config: %v", err)
	}
}

func TestConvertResult(t *testing.T) {
	text := func(s string) mcp.Content { return &mcp.TextContent{Text: s} }
	for _, c := range []struct {
		name string
		res  *mcp.CallToolResult
		want any
	}{
		{"structured wins", &mcp.CallToolResult{StructuredContent: map[string]any{"n": 3.0, "f": 1.5}, Content: []mcp.Content{text("ignored")}},
			map[string]any{"n": int64(3), "f": 1.5}},
		{"json text", &mcp.CallToolResult{Content: []mcp.Content{text(` [1, 2.5, {"a": null}, 9007199254740993] `)}},
			[]any{int64(1), 2.5, map[string]any{"a": nil}, int64(9007199254740993)}},
		{"json string", &mcp.CallToolResult{Content: []mcp.Content{text(`"quoted"`)}}, "quoted"},
		{"plain text", &mcp.CallToolResult{Content: []mcp.Content{text("12 apples")}}, "12 apples"},
		{"several", &mcp.CallToolResult{Content: []mcp.Content{text("a"), text("true"), &mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2}}}},
			[]any{"a", true, map[string]any{"type": "image", "mimeType": "image/png", "data": "AQI="}}},
		{"empty", &mcp.CallToolResult{}, nil},
	} {
		got, err := convertResult(c.res)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, got, c.want)
		}
	}
	_, err := convertResult(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{text("disk full"), text("try later")}})
	if err == nil || err.Error() != "tool_error: disk full\ntry later" {
		t.Errorf("isError: %v", err)
	}
}

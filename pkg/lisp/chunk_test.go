package lisp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// testTools are available to every testdata chunk.
func testTools() core.Tools {
	return core.Tools{
		"echo": core.ToolFunc(func(_ context.Context, args map[string]any) (any, error) { return args, nil }),
		"add": core.ToolFunc(func(_ context.Context, args map[string]any) (any, error) {
			a, _ := args["a"].(int64)
			b, _ := args["b"].(int64)
			return a + b, nil
		}),
		"boom":  core.ToolFunc(func(context.Context, map[string]any) (any, error) { return nil, errors.New("rate limited") }),
		"panic": core.ToolFunc(func(context.Context, map[string]any) (any, error) { panic("kaboom") }),
		"get_users": core.ToolFunc(func(context.Context, map[string]any) (any, error) {
			return []any{
				map[string]any{"id": int64(1), "name": "ann", "role": "admin", "age": int64(31)},
				map[string]any{"id": int64(2), "name": "bob", "role": "user", "age": int64(25)},
				map[string]any{"id": int64(3), "name": "cy", "role": "user", "age": int64(40)},
			}, nil
		}),
		"hang": core.ToolFunc(func(ctx context.Context, _ map[string]any) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}),
		"slow": core.ToolFunc(func(ctx context.Context, _ map[string]any) (any, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(50 * time.Millisecond):
				return "done", nil
			}
		}),
	}
}

type chunk struct {
	file    string
	line    int
	src     string
	want    string // pr-str of the expected value
	wantErr *regexp.Regexp
	ctx     map[string]any
	mem     map[string]any
	prints  []string
	opts    Options
}

// readChunks splits a testdata file on lines "---". In a chunk:
//
//	;=> <pr-str of the expected value>
//	;;; "regex"           expected error; matched against "reason: detail"
//	;; @ctx {json}         ctx/ inputs
//	;; @mem {json}         initial memory
//	;; @contract           Options.MemoryContract = true
//	;; @prints "line"      expected println line (repeatable)
//	;; @looplimit N        Options.LoopLimit
//	;; @maxmemory N         Options.MaxMemory (bytes)
func readChunks(t *testing.T, path string) []chunk {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []chunk
	lines := strings.Split(string(data), "\n")
	cur := chunk{file: filepath.Base(path), line: 1}
	var src []string
	flush := func() {
		cur.src = strings.Join(src, "\n")
		if strings.TrimSpace(cur.src) != "" || cur.want != "" || cur.wantErr != nil {
			chunks = append(chunks, cur)
		}
		src = nil
	}
	for i, l := range lines {
		tl := strings.TrimSpace(l)
		switch {
		case tl == "---":
			flush()
			cur = chunk{file: filepath.Base(path), line: i + 2}
			continue
		case strings.HasPrefix(tl, ";=>"):
			cur.want = strings.TrimSpace(strings.TrimPrefix(tl, ";=>"))
		case strings.HasPrefix(tl, ";;;"):
			var rx string
			if err := json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(tl, ";;;"))), &rx); err != nil {
				t.Fatalf("%s:%d: bad error regex: %v", path, i+1, err)
			}
			cur.wantErr = regexp.MustCompile(rx)
		case strings.HasPrefix(tl, ";; @ctx "):
			cur.ctx = decodeJSON(t, strings.TrimPrefix(tl, ";; @ctx "))
		case strings.HasPrefix(tl, ";; @mem "):
			cur.mem = decodeJSON(t, strings.TrimPrefix(tl, ";; @mem "))
		case tl == ";; @contract":
			cur.opts.MemoryContract = true
		case strings.HasPrefix(tl, ";; @prints "):
			var s string
			if err := json.Unmarshal([]byte(strings.TrimPrefix(tl, ";; @prints ")), &s); err != nil {
				t.Fatalf("%s:%d: bad @prints: %v", path, i+1, err)
			}
			cur.prints = append(cur.prints, s)
		case strings.HasPrefix(tl, ";; @maxmemory "):
			var n int64
			json.Unmarshal([]byte(strings.TrimPrefix(tl, ";; @maxmemory ")), &n)
			cur.opts.MaxMemory = n
		case strings.HasPrefix(tl, ";; @looplimit "):
			var n int64
			json.Unmarshal([]byte(strings.TrimPrefix(tl, ";; @looplimit ")), &n)
			cur.opts.LoopLimit = n
		default:
			src = append(src, l)
		}
	}
	flush()
	return chunks
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("bad json %q: %v", s, err)
	}
	return m
}

func TestChunks(t *testing.T) {
	files, err := filepath.Glob("testdata/*.lisp")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	total := 0
	for _, f := range files {
		for _, c := range readChunks(t, f) {
			total++
			c := c
			t.Run(c.file+":"+itoa(c.line), func(t *testing.T) {
				t.Parallel()
				runChunk(t, c)
			})
		}
	}
	t.Logf("%d chunks", total)
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + func() string { return jsonInt(n) }())
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

func runChunk(t *testing.T, c chunk) {
	t.Helper()
	opts := c.opts
	opts.Context = c.ctx
	opts.Memory = c.mem
	opts.Tools = testTools()
	if opts.Timeout == 0 {
		// long, for slow -race runs of the 1,400 chunks in parallel on a
		// loaded machine, where a chunk of well under a second may wait
		// more than 10 s for the CPU; the step budget below ends runaway
		// chunks quickly instead
		opts.Timeout = 2 * time.Minute
	}
	if opts.MaxSteps == 0 {
		opts.MaxSteps = 20_000_000
	}
	res, err := Exec(context.Background(), c.src, opts)
	where := c.file + ":" + itoa(c.line)
	if c.wantErr != nil {
		if err == nil {
			t.Fatalf("%s: want error %q, got value %s\n%s", where, c.wantErr, core.PrStr(res.Value), c.src)
		}
		var e *core.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: error is %T, not *Error: %v", where, err, err)
		}
		text := e.Reason() + ": " + e.Detail()
		if !c.wantErr.MatchString(text) {
			t.Fatalf("%s: error %q does not match %q\n%s", where, text, c.wantErr, c.src)
		}
		return
	}
	if err != nil {
		var e *core.Error
		errors.As(err, &e)
		t.Fatalf("%s: unexpected error: %s\n%s", where, e.Reason()+": "+e.Detail(), c.src)
	}
	if c.want != "" {
		got := core.Sprint(res.Value, core.PrintOptions{NoFirewall: true})
		if got != c.want {
			t.Fatalf("%s: got %s, want %s\n%s", where, got, c.want, c.src)
		}
	}
	if c.prints != nil {
		if strings.Join(res.Prints, "\n") != strings.Join(c.prints, "\n") {
			t.Fatalf("%s: prints %q, want %q", where, res.Prints, c.prints)
		}
	}
}

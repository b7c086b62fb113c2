package agent

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// compressSecret is a firewalled card number the orders carry.
const compressSecret = "4111-2222-3333-4444"

// summariesOnly is the default strategy with no turn sent whole: these
// tests' prompts are far under DefaultCachePrefix, so by default every
// request would be the uncompressed conversation (TestCompressionWholeTurns).
var summariesOnly = CoalescedHistory{CachePrefix: -1}

// compressMission is a 4-turn mission: a tool call and a print, an error,
// a map merged into memory and a tool call whose argument is firewalled,
// then the return.
func compressMission(compression bool) (Spec, []llmtest.Reply) {
	orders := []any{
		map[string]any{"id": int64(1), "status": "paid", "total": 12.5, "_card": compressSecret},
		map[string]any{"id": int64(2), "status": "open", "total": 3.0, "_card": "5500-0000-0000-0004"},
		map[string]any{"id": int64(3), "status": "paid", "total": 7.25, "_card": "3400-0000-0000-009"},
	}
	spec := Spec{Name: "totals", Prompt: "Total the paid orders.", Signature: "{count :int, total :float}",
		Limits: Limits{MaxTurns: 6}, Compression: compression,
		Tools: map[string]Tool{
			"list_orders": FuncSig("(status :string) -> [{id :int, status :string, total :float, _card :string}]",
				func(_ context.Context, args map[string]any) (any, error) {
					var out []any
					for _, o := range orders {
						if o.(map[string]any)["status"] == args["status"] {
							out = append(out, o)
						}
					}
					return out, nil
				}),
			"check_card": FuncSig("(card :string) -> :bool", func(context.Context, map[string]any) (any, error) { return true, nil }),
		}}
	if compression {
		spec.HistoryStrategy = summariesOnly
	}
	return spec, []llmtest.Reply{
		llmtest.Code(`(def paid (tool/list_orders {:status "paid"}))
(println "paid orders:" (count paid) "first card:" (:_card (first paid)))
(tool/check_card {:card (:_card (first paid))})
(count paid)`),
		llmtest.Code(`(sum-by :totl paid) (undefined-fn 1)`),
		llmtest.Text("I will sum them.\n```clojure\n{:total (sum-by :total paid)}\n```"),
		llmtest.Code(`(return {:count (count paid) :total total})`),
	}
}

// blockTexts returns the text blocks of a request's only message and
// which of them carry a cache breakpoint.
func blockTexts(t *testing.T, req llm.Request) ([]string, []bool) {
	t.Helper()
	if len(req.Messages) != 1 || req.Messages[0].Role != llm.RoleUser {
		t.Fatalf("request of turn %d has %d messages, want one user message", req.Turn, len(req.Messages))
	}
	var texts []string
	var marks []bool
	for _, b := range req.Messages[0].Content {
		tb, ok := b.(llm.Text)
		if !ok {
			t.Fatalf("block %T, want text", b)
		}
		texts = append(texts, tb.Text)
		marks = append(marks, tb.Cache)
	}
	return texts, marks
}

const compressMissionText = `## Tools
- check_card(card :string) -> :bool
- list_orders(status :string) -> [{id :int, status :string, total :float}]

## Expected output
Return a value of type {count :int, total :float}.

## Mission
Total the paid orders.
`

// The same scripted mission with compression off and on: the turns in the
// trace are the same; off, each request resends every answer and its
// feedback; on, each request is one user message: turn 1's as off, then
// the mission, a record per turn played (tool calls with firewalled args,
// then what its feedback said: prints, result or the whole error), no
// program and no prose, then memory's names and the turn line, with the
// cache breakpoint on the last record, which the next request repeats. No
// request holds the firewalled card number.
func TestCompressionRequests(t *testing.T) {
	offSpec, replies := compressMission(false)
	off, err, offModel := run(t, mustNew(t, offSpec), RunOptions{}, replies...)
	if err != nil {
		t.Fatal(err)
	}
	onSpec, replies := compressMission(true)
	on, err, onModel := run(t, mustNew(t, onSpec), RunOptions{}, replies...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(off.Return, on.Return) || len(off.Trace) != 4 || len(on.Trace) != 4 {
		t.Fatalf("returns %v / %v, %d / %d turns", off.Return, on.Return, len(off.Trace), len(on.Trace))
	}
	for i := range off.Trace {
		a, b := off.Trace[i], on.Trace[i]
		if a.Program != b.Program || a.Feedback != b.Feedback || a.Error != b.Error || a.Raw != b.Raw ||
			!reflect.DeepEqual(a.Result, b.Result) || !reflect.DeepEqual(a.Prints, b.Prints) || len(a.ToolCalls) != len(b.ToolCalls) {
			t.Errorf("turn %d differs in the trace:\noff %+v\non  %+v", i+1, a, b)
		}
	}

	offReqs, onReqs := offModel.Requests(), onModel.Requests()
	if len(offReqs) != 4 || len(onReqs) != 4 {
		t.Fatalf("%d / %d requests", len(offReqs), len(onReqs))
	}
	last := offReqs[3]
	if len(last.Messages) != 7 || !last.CacheHistory {
		t.Fatalf("uncompressed turn 4: %d messages, CacheHistory %v", len(last.Messages), last.CacheHistory)
	}
	for i, r := range replies[:3] {
		if got := last.Messages[1+2*i].Text(); got != r.Content {
			t.Errorf("uncompressed turn 4, answer %d = %q, want %q", i+1, got, r.Content)
		}
	}

	for i, r := range onReqs {
		if r.CacheHistory || !r.CacheSystem {
			t.Errorf("compressed request %d: CacheHistory %v, CacheSystem %v", i+1, r.CacheHistory, r.CacheSystem)
		}
		if r.System != offReqs[i].System {
			t.Errorf("request %d: the system prompt differs", i+1)
		}
	}
	texts, marks := blockTexts(t, onReqs[0])
	if len(texts) != 1 || texts[0] != offReqs[0].Messages[0].Text() || marks[0] {
		t.Errorf("compressed turn 1 = %q %v, want the uncompressed first message", texts, marks)
	}
	texts, marks = blockTexts(t, onReqs[1])
	if !reflect.DeepEqual(marks, []bool{false, true, false}) || texts[0] != compressMissionText {
		t.Errorf("compressed turn 2: blocks %q, marks %v", texts, marks)
	}
	texts, marks = blockTexts(t, onReqs[3])
	want := []string{compressMissionText,
		`Earlier turns:
1 (tool/list_orders {:status "paid"})
(tool/check_card {:card <Firewalled>})
Output:
paid orders: 2 first card: <Firewalled>
=> 2
`,
		`2 Error: 1:22: undefined symbol: undefined-fn
  (sum-by :totl paid) (undefined-fn 1)
                       ^
`,
		"3 => {:total 19.75}\n",
		"Memory: paid [2 maps], total (float)\nTurn 4 of 6 (2 remaining)",
	}
	if !reflect.DeepEqual(texts, want) {
		t.Errorf("compressed turn 4:\n%s\nwant\n%s", strings.Join(texts, "|||\n"), strings.Join(want, "|||\n"))
	}
	if !reflect.DeepEqual(marks, []bool{false, false, false, true, false}) {
		t.Errorf("compressed turn 4: breakpoints %v, want on the last record", marks)
	}
	// turn 3's blocks are a prefix of turn 4's, up to its breakpoint
	texts3, _ := blockTexts(t, onReqs[2])
	if len(texts3) != 4 || !reflect.DeepEqual(texts3[:3], texts[:3]) {
		t.Errorf("turn 3 does not start with turn 4's blocks: %q", texts3)
	}
	if onText, offText := onReqs[3].Messages[0].Text(), allText(offReqs[3]); len(onText) >= len(offText) {
		t.Errorf("compressed turn 4 sends %d bytes, uncompressed %d", len(onText), len(offText))
	}
	for i := range 4 {
		for _, r := range []llm.Request{offReqs[i], onReqs[i]} {
			notContains(t, r.System+allText(r), compressSecret, "5500-0000")
		}
	}
}

func allText(r llm.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Text())
	}
	return b.String()
}

// A sub-agent with compression: its requests are compressed, its
// uncompressed parent's are not, and the child's turns are in the
// parent's trace as they were played.
func TestCompressionSubAgent(t *testing.T) {
	child := mustNew(t, Spec{Name: "counter", Prompt: "Count to three.", Signature: ":int", Compression: true, HistoryStrategy: summariesOnly, Limits: Limits{MaxTurns: 4}})
	parent := mustNew(t, Spec{Name: "boss", Prompt: "Ask the counter.", Signature: ":int",
		Tools: map[string]Tool{"counter": child.AsTool(ToolOptions{})}})
	st, err, m := run(t, parent, RunOptions{},
		llmtest.Code(`(def n (tool/counter {})) n`),
		llmtest.Code(`(def a 1) a`),
		llmtest.Code(`(def b (+ a 1)) (println "b is" b) b`),
		llmtest.Code(`(return (+ b 1))`),
		llmtest.Code(`(return n)`),
	)
	if err != nil || st.Return != int64(3) {
		t.Fatalf("return %v, %v", st.Return, err)
	}
	reqs := m.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests", len(reqs))
	}
	texts, marks := blockTexts(t, reqs[3]) // the child's turn 3
	want := []string{"## Tools\n(none)\n\n## Expected output\nReturn a value of type :int.\n\n## Mission\nCount to three.\n",
		"Earlier turns:\n1 => 1\n",
		"2 Output:\nb is 2\n=> 2\n",
		"Memory: a (integer), b (integer)\nTurn 3 of 4 (1 remaining)"}
	if !reflect.DeepEqual(texts, want) || !reflect.DeepEqual(marks, []bool{false, false, true, false}) {
		t.Fatalf("child turn 3: %q %v", texts, marks)
	}
	if p := reqs[4]; len(p.Messages) != 3 || !p.CacheHistory || p.Messages[1].Text() != "```clojure\n(def n (tool/counter {})) n\n```" {
		t.Errorf("parent turn 2 is not the whole conversation: %d messages", len(p.Messages))
	}
	c := st.Trace[0].ToolCalls[0].Child
	if c == nil || len(c.Trace) != 3 || c.Trace[1].Program != `(def b (+ a 1)) (println "b is" b) b` {
		t.Fatalf("child trace: %+v", c)
	}
}

// Compression is checked by New and travels on the wire, sub-agents
// included.
func TestCompressionSpec(t *testing.T) {
	_, err := New(Spec{Prompt: "p", Output: OutputText, Compression: true})
	wantSpecError(t, err, "compression", "text mode keeps the provider's tool-call conversation")
	_, err = New(Spec{Prompt: "p", HistoryStrategy: CoalescedHistory{}})
	wantSpecError(t, err, "history_strategy", "needs compression: true")

	child := mustNew(t, Spec{Name: "c", Prompt: "child", Compression: true})
	w := Spec{Prompt: "p", Compression: true, Tools: map[string]Tool{"c": child.AsTool(ToolOptions{})}}.ToWire()
	if !w.Compression || !w.SubAgents["c"].Compression {
		t.Fatalf("wire: %+v", w)
	}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := FromWire(w, nil)
	if err != nil || !s.Compression {
		t.Fatalf("FromWire: %+v %v", s, err)
	}
	text := &messages.AgentSpec{Prompt: "p", Output: OutputText, Compression: true}
	if err := text.Validate(); err == nil || !strings.Contains(err.Error(), "agent.compression") {
		t.Errorf("Validate = %v", err)
	}
}

// lastOnly is a HistoryStrategy that sends the mission and the last
// turn's feedback only.
type lastOnly struct{ seen []string }

func (s *lastOnly) Messages(h *History) []llm.Message {
	if len(h.Turns) == 0 {
		return []llm.Message{llm.UserText(h.FirstMessage())}
	}
	var mem []string
	for _, e := range h.Memory {
		mem = append(mem, e.String())
	}
	s.seen = append(s.seen, fmt.Sprintf("next %d of %d, memory %s", h.Next, h.MaxTurns, strings.Join(mem, ", ")))
	return []llm.Message{llm.UserText(h.Mission + "\n" + h.Turns[len(h.Turns)-1].Feedback)}
}

// A strategy of one's own renders the requests.
func TestCompressionCustomStrategy(t *testing.T) {
	strat := &lastOnly{}
	a := mustNew(t, Spec{Prompt: "Say hi.", Compression: true, HistoryStrategy: strat, Limits: Limits{MaxTurns: 3}})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(def greeting "hello there") greeting`),
		llmtest.Code(`(return greeting)`))
	if err != nil {
		t.Fatal(err)
	}
	got := m.Requests()[1].Messages
	want := "## Tools\n(none)\n\n## Expected output\nReturn a value of type :any.\n\n## Mission\nSay hi.\nResult: \"hello there\"\nMemory: greeting\nTurn 2 of 3 (1 remaining)"
	if len(got) != 1 || got[0].Text() != want {
		t.Errorf("turn 2 = %q\nwant %q", got[0].Text(), want)
	}
	if !reflect.DeepEqual(strat.seen, []string{"next 2 of 3, memory greeting (11-char string)"}) {
		t.Errorf("the strategy saw %q", strat.seen)
	}
}

// A record shows the result preview as the turn's feedback showed it (the
// model reads it there first), and later requests repeat it unchanged.
func TestCompressionRecordsKeepPreviews(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Make a long string.", Compression: true, HistoryStrategy: summariesOnly, Limits: Limits{MaxTurns: 4}})
	st, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(apply str (repeat 300 "x"))`),
		llmtest.Code(`(apply str (repeat 300 "y"))`),
		llmtest.Code(`(return 1)`))
	if err != nil {
		t.Fatal(err)
	}
	want := "Earlier turns:\n1 => \"" + strings.Repeat("x", 300) + "\"\n"
	contains(t, st.Trace[0].Feedback, "Result: \""+strings.Repeat("x", 300)+"\"\n")
	for i, r := range m.Requests()[1:] {
		texts, _ := blockTexts(t, r)
		if len(texts) != 3+i || texts[1] != want {
			t.Fatalf("turn %d's blocks = %q, want turn 1's record %q", i+2, texts, want)
		}
	}
	texts, _ := blockTexts(t, m.Requests()[2])
	if texts[2] != "2 => \""+strings.Repeat("y", 300)+"\"\n" {
		t.Errorf("turn 2's record = %q", texts[2])
	}
}

// noMessages is a broken HistoryStrategy.
type noMessages struct{}

func (noMessages) Messages(*History) []llm.Message { return nil }

// A strategy that renders nothing fails the run with an error naming it,
// without calling the model.
func TestCompressionEmptyStrategy(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "p", Compression: true, HistoryStrategy: noMessages{}})
	st, err, m := run(t, a, RunOptions{})
	wantReason(t, st, err, "internal_error")
	if !strings.Contains(st.Fail.Message, "agent.noMessages rendered no message for turn 1") || m.Calls() != 0 {
		t.Errorf("fail %q after %d calls", st.Fail.Message, m.Calls())
	}
}

// An answer without a program: its record is the boundary reminder the
// feedback gave, and the answer is not repeated.
func TestCompressionAnswerWithoutProgram(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Count.", Compression: true, HistoryStrategy: summariesOnly, Limits: Limits{MaxTurns: 4}})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Text("I think the answer is 3."),
		llmtest.Code(`(def n 3) n`),
		llmtest.Code(`(return n)`))
	if err != nil {
		t.Fatal(err)
	}
	texts, _ := blockTexts(t, m.Requests()[1])
	want := []string{"## Tools\n(none)\n\n## Expected output\nReturn a value of type :any.\n\n## Mission\nCount.\n",
		"Earlier turns:\n1 " + BoundaryReminder + "\n",
		"Memory: (empty)\nTurn 2 of 4 (2 remaining)"}
	if !reflect.DeepEqual(texts, want) {
		t.Errorf("turn 2's blocks = %q\nwant %q", texts, want)
	}
	texts, _ = blockTexts(t, m.Requests()[2])
	if len(texts) != 4 || texts[1] != want[1] || texts[3] != "Memory: n (integer)\nTurn 3 of 4 (1 remaining)" {
		t.Errorf("turn 3's blocks = %q", texts)
	}
}

// A tool call that failed is listed with the first line of its error; the
// record then gives the program's error as the feedback did.
func TestCompressionFailedToolCall(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Try the tool.", Compression: true, HistoryStrategy: summariesOnly, Limits: Limits{MaxTurns: 4},
		Tools: map[string]Tool{"boom": Func(func(context.Context, map[string]any) (any, error) {
			return nil, fmt.Errorf("kaboom\nsecond line")
		})}})
	st, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(tool/boom {:x 1 :why "test"})`),
		llmtest.Code(`(def n 1) n`),
		llmtest.Code(`(return n)`))
	if err != nil {
		t.Fatal(err)
	}
	texts, _ := blockTexts(t, m.Requests()[2])
	fb := st.Trace[0].Feedback
	want := "Earlier turns:\n1 (tool/boom {:why \"test\" :x 1}) failed: kaboom\n" +
		strings.TrimSuffix(fb, "Turn 2 of 4 (2 remaining)")
	if len(texts) != 4 || texts[1] != want || !strings.Contains(want, "Error: 1:1: tool 'boom' failed: kaboom\nsecond line\n") {
		t.Fatalf("turn 3's blocks = %q, want turn 1's record %q", texts, want)
	}
}

// requestBlocks flattens a request's messages into role-tagged text
// blocks, each with its cache breakpoint, as a provider lays them out.
func requestBlocks(t *testing.T, r llm.Request) (texts []string, marks []bool) {
	t.Helper()
	for _, m := range r.Messages {
		for _, b := range m.Content {
			tb, ok := b.(llm.Text)
			if !ok {
				t.Fatalf("block %T, want text", b)
			}
			texts, marks = append(texts, string(m.Role)+": "+tb.Text), append(marks, tb.Cache)
		}
	}
	return texts, marks
}

// The default strategy sends a turn whole while the system prompt, the
// first message, the whole turns before it and the turn itself are under
// its CachePrefix: a mission far under DefaultCachePrefix sends the
// uncompressed conversation, its last block a cache breakpoint; with the
// CachePrefix that turn 2 sent whole reaches, turn 1 stays whole and the
// later turns are recorded after it (turn 2 too, though its record alone
// would stay under the limit). Either way
// every request repeats the previous one's blocks but its last, so a
// provider cache reads them.
func TestCompressionWholeTurns(t *testing.T) {
	// requests runs the compression mission with spec and returns the
	// four requests its model received
	requests := func(t *testing.T, spec Spec, replies []llmtest.Reply) []llm.Request {
		t.Helper()
		_, err, model := run(t, mustNew(t, spec), RunOptions{}, replies...)
		if err != nil {
			t.Fatal(err)
		}
		reqs := model.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d requests", len(reqs))
		}
		return reqs
	}
	offSpec, offReplies := compressMission(false)
	offReqs := requests(t, offSpec, offReplies)
	prefix := func(t *testing.T, reqs []llm.Request) {
		t.Helper()
		for i := 1; i < len(reqs); i++ {
			prev, _ := requestBlocks(t, reqs[i-1])
			cur, _ := requestBlocks(t, reqs[i])
			if len(cur) < len(prev) || !reflect.DeepEqual(cur[:len(prev)-1], prev[:len(prev)-1]) {
				t.Errorf("request %d does not repeat request %d's blocks:\n%q\n%q", i+1, i, prev, cur)
			}
		}
	}

	t.Run("default", func(t *testing.T) {
		spec, replies := compressMission(true)
		spec.HistoryStrategy = nil
		reqs := requests(t, spec, replies)
		for i, r := range reqs {
			texts, marks := requestBlocks(t, r)
			offTexts, _ := requestBlocks(t, offReqs[i])
			if !reflect.DeepEqual(texts, offTexts) {
				t.Errorf("request %d:\n%q\nwant the uncompressed\n%q", i+1, texts, offTexts)
			}
			if want := i > 0; marks[len(marks)-1] != want || r.CacheHistory {
				t.Errorf("request %d: last block's breakpoint %v, CacheHistory %v", i+1, marks[len(marks)-1], r.CacheHistory)
			}
		}
		prefix(t, reqs)
	})

	t.Run("one whole turn", func(t *testing.T) {
		spec, replies := compressMission(true)
		// the limit turn 2 reaches sent whole: its record is far shorter
		// than its answer and feedback, but it is recorded all the same
		size := len(offReqs[2].System)
		for _, m := range offReqs[2].Messages {
			size += len(m.Text())
		}
		spec.HistoryStrategy = CoalescedHistory{CachePrefix: estimatedTokens(size)}
		reqs := requests(t, spec, replies)
		offTexts, _ := requestBlocks(t, offReqs[1])
		texts, marks := requestBlocks(t, reqs[3])
		want := append(offTexts[:3:3],
			"user: \nEarlier turns:\n2 Error: 1:22: undefined symbol: undefined-fn\n  (sum-by :totl paid) (undefined-fn 1)\n                       ^\n",
			"user: 3 => {:total 19.75}\n",
			"user: Memory: paid [2 maps], total (float)\nTurn 4 of 6 (2 remaining)")
		if !reflect.DeepEqual(texts, want) {
			t.Errorf("turn 4:\n%s\nwant\n%s", strings.Join(texts, "|||\n"), strings.Join(want, "|||\n"))
		}
		if !reflect.DeepEqual(marks, []bool{false, false, false, false, true, false}) {
			t.Errorf("turn 4: breakpoints %v, want on the record of turn 3", marks)
		}
		if n := len(reqs[3].Messages); n != 3 || reqs[3].Messages[2].Role != llm.RoleUser {
			t.Errorf("turn 4 has %d messages, want the first, the answer of turn 1 and one user message", n)
		}
		prefix(t, reqs)
		for _, r := range reqs {
			notContains(t, allText(r), compressSecret, "5500-0000")
		}
	})
}

// With a plan, the last block ends with the plan's state after the last
// turn, as the uncompressed feedback does; records hold no plan, so they
// stay as they were written when a later turn marks a step done.
func TestCompressionPlan(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Sum the orders", Signature: ":int", Plan: []string{"Fetch the orders", "Sum them"},
		Compression: true, HistoryStrategy: summariesOnly, Limits: Limits{MaxTurns: 4}})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(step-done "1" "fetched 3 orders") (def orders [1 2 3]) orders`),
		llmtest.Code(`(step-done "2" "summed") (def total (reduce + orders)) total`),
		llmtest.Code(`(return total)`))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	t2, _ := blockTexts(t, reqs[1])
	t3, _ := blockTexts(t, reqs[2])
	if len(t2) != 3 || len(t3) != 4 || t3[1] != t2[1] {
		t.Fatalf("turn 2's blocks %q, turn 3's %q", t2, t3)
	}
	if want := "Earlier turns:\n1 => [1 2 3]\n"; t2[1] != want {
		t.Errorf("turn 1's record = %q, want %q", t2[1], want)
	}
	if want := "Memory: orders [3 integers]\nTurn 2 of 4 (2 remaining)\n\n## Plan\n1. [x] Fetch the orders — fetched 3 orders\n2. [ ] Sum them\n"; !strings.HasPrefix(t2[2], want) {
		t.Errorf("turn 2's last block = %q, want it to start with %q", t2[2], want)
	}
	contains(t, t3[3], "Memory: orders [3 integers], total (integer)\nTurn 3 of 4 (1 remaining)\n\n## Plan\n1. [x] Fetch the orders — fetched 3 orders\n2. [x] Sum them — summed\n")
}

// The memory line gives each name's type and size: a vector or set by its
// literal's brackets around its count and element type ("items" when the
// elements differ, hold nil or are none), a map by its entries, a string
// by its characters, other values by their type; a firewalled name by its
// type alone.
func TestCompressionMemoryTypesAndSizes(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Keep things.", Compression: true, HistoryStrategy: summariesOnly, Limits: Limits{MaxTurns: 3}})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(def rows [{:a 1} {:a 2}]) (def none []) (def mixed [1 "a"]) (def holes [1 nil])
(def ids #{1 2 3}) (def kws [:a]) (def nested [[1] [2]]) (def totals {:a 1 :b 2}) (def word "héllo")
(def n 42) (def x 1.5) (def f (fn [v] v)) (def _secret [1 2]) 1`),
		llmtest.Code(`(return 1)`))
	if err != nil {
		t.Fatal(err)
	}
	texts, _ := blockTexts(t, m.Requests()[1])
	want := "Memory: _secret (vector), f (function), holes [2 items], ids #{3 integers}, kws [1 keyword], mixed [2 items], n (integer), " +
		"nested [2 vectors], none [0 items], rows [2 maps], totals {2 entries}, word (5-char string), x (float)\nTurn 2 of 3 (1 remaining)"
	if got := texts[len(texts)-1]; got != want {
		t.Errorf("memory block = %q\nwant %q", got, want)
	}
}

package agent

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Compression: what the model is sent of a run's history is rendered from
// the turns by a HistoryStrategy (Spec.Compression); the turns themselves,
// as the trace records them, are not changed.

// HistoryStrategy renders the messages of a compressed run's request (the
// conversation after the system prompt) from its history. Messages is
// called once per turn, before the model is called, with the history of
// the turns played so far; it must not keep or modify h. Everything in h
// is model-bound text already firewalled (docs/firewall.md), so a strategy
// that only selects and arranges it keeps firewalled values masked.
//
// A strategy marks the text blocks that the next turn's request repeats
// unchanged with llm.Text.Cache (a provider cache breakpoint); compressed
// requests carry no Request.CacheHistory.
type HistoryStrategy interface {
	Messages(h *History) []llm.Message
}

// History is a run's history as a HistoryStrategy reads it.
type History struct {
	// Mission is the first user message without its turn line: data
	// inventory, tools, expected output and the mission.
	Mission string
	// System is the system prompt the requests carry ("" when it is
	// rendered per turn, by SystemPrompt.LanguageSpecFunc).
	System string
	// Turns are the turns played so far, oldest first.
	Turns []HistoryTurn
	// Memory lists the names in memory after the last turn, sorted.
	Memory []MemoryEntry
	// Next is the turn the request is for; MaxTurns the agent's max_turns.
	Next, MaxTurns int
	// single: a single-turn agent, whose messages carry no turn line
	single bool
	// session: a Session's history, which has no turn limit: its last
	// block carries no turn line
	session bool
}

// TurnLine is the line that tells the model which turn n is ("Turn 3 of
// 10 (7 remaining)", with the last-turn warning on the last turn); "" for
// a single-turn agent.
func (h *History) TurnLine(n int) string {
	if h.single {
		return ""
	}
	return turnLine(n, h.MaxTurns)
}

// nextLine is the turn line of the request being rendered ("" in a
// Session).
func (h *History) nextLine() string {
	if h.session {
		return ""
	}
	return h.TurnLine(h.Next)
}

// FirstMessage is the user message of turn 1: Mission and the turn line.
func (h *History) FirstMessage() string {
	if l := h.TurnLine(1); l != "" {
		return h.Mission + "\n\n" + l
	}
	return h.Mission
}

// HistoryTurn is one played turn, its texts firewalled as the model reads
// them.
type HistoryTurn struct {
	// Number counts turns from 1.
	Number int
	// Answer is the model's answer as it was received; Program the
	// PTC-Lisp program found in it ("" when it held none).
	Answer  string
	Program string
	// ToolCalls are the turn's tool calls in order, each written as the
	// call (tool/name args), args previewed; a call that failed ends with
	// " failed: " and the first line of its error.
	ToolCalls []string
	// Prints is the turn's println output, each line cut to 512 bytes.
	Prints []string
	// Result is the preview of the value the program ended with, as the
	// feedback showed it, cut at 200 bytes ("" when the turn failed).
	Result string
	// Error is the first line of the turn's error ("" when it succeeded).
	Error string
	// Feedback is the whole message sent after the turn (its turn line
	// included).
	Feedback string
	// Report is what Feedback says of the turn itself, as a record shows
	// it: Feedback without the memory line, the turn line and the plan
	// (the prints, the result preview with its notes or the error, the
	// warnings; for an answer without a program, the reminder to write
	// one), the result labeled "=> " where Feedback says "Result: ",
	// ending with a newline.
	Report string
	// Plan is the plan's state after the turn, as Feedback ends with it
	// ("" without a plan).
	Plan string
}

// MemoryEntry is one name in memory: its type (lisp.TypeName) and size:
// a vector's or set's element count and element type ("2000 maps", "693
// integers"; "items" when the elements differ in type or are nil, and
// for none), a map's entries ("8 entries"), a string's characters ("42
// chars"); "" for other values and for firewalled names, whose values are
// hidden.
type MemoryEntry struct {
	Name string
	Type string
	Size string
}

// String renders e as the default strategy lists it: a collection by its
// literal's brackets around its size, "custs [2000 maps]" (vector), "ids
// #{693 integers}" (set), "totals {4 entries}" (map); a string by its
// length, "best (4-char string)"; any other value by its type, "n
// (integer)", as a firewalled name is, "_key (string)".
func (e MemoryEntry) String() string {
	if e.Size == "" {
		return e.Name + " (" + e.Type + ")"
	}
	switch e.Type {
	case "vector":
		return e.Name + " [" + e.Size + "]"
	case "set":
		return e.Name + " #{" + e.Size + "}"
	case "map":
		return e.Name + " {" + e.Size + "}"
	case "string":
		n, unit, _ := strings.Cut(e.Size, " ")
		return e.Name + " (" + n + "-" + strings.TrimSuffix(unit, "s") + " string)"
	}
	return e.Name + " (" + e.Type + ", " + e.Size + ")"
}

// CoalescedHistory is the default HistoryStrategy: the conversation as an
// uncompressed run sends it while it is short, then an append-only record
// of the later turns without their programs, so that every request repeats
// the previous one but for its last block and a provider's prefix cache
// keeps reading it.
//
// The first turns are sent whole (the first message, each answer, each
// feedback, as without compression) while the prompt stays too short for
// a provider to cache: a turn is whole when the system prompt, the first
// message, the whole turns before it and the turn itself (answer and
// feedback) are estimated (at 3.5 bytes a token) under CachePrefix. The
// first turn that would reach it, and every later turn, is recorded
// instead. Providers cache a prefix only from 1,024 tokens (OpenAI and
// Anthropic alike): below that, sending turns whole costs no cache read,
// and from there the prompt grows by records, not by programs. When every
// turn played is whole, the request is the uncompressed conversation, its
// last block a cache breakpoint. Otherwise the last user message holds,
// as text blocks in this order:
//
//   - the feedback of the last whole turn or, when no turn is whole,
//     Mission and a newline;
//   - one record per later turn, oldest first ("\nEarlier turns:\n"
//     heads the first, without its leading newline when no turn is
//     whole): the turn's number and a space, then one "(tool/name args)"
//     line per tool call, and the turn's Report (prints after "Output:",
//     "=> " and the result preview with its notes, or "Error: " and the
//     error, warnings), ending with a newline, as in "3 => 693\n"; the
//     last record is the cache breakpoint;
//   - "Memory: " and each name in memory with its type and size
//     (MemoryEntry.String), sorted and joined by ", " ("(empty)" when
//     there is none), then the turn line on its own line (none in a
//     Session's history), then a blank line and the plan's state when the
//     agent has a plan.
//
// No block but the last changes once it is written: a record is written
// once, when its turn is played, and stays as it is.
type CoalescedHistory struct {
	// CachePrefix is the size, in tokens, that the first turns are sent
	// whole under: a turn is whole while the system prompt, the first
	// message, the turns before it and the turn itself are estimated (at
	// 3.5 bytes a token) under it. 0 means DefaultCachePrefix; a negative
	// value sends no turn whole.
	CachePrefix int
}

// DefaultCachePrefix is CoalescedHistory's default CachePrefix: the
// shortest prompt prefix OpenAI and Anthropic cache, in tokens.
const DefaultCachePrefix = 1024

// earlierHeading heads the first record of CoalescedHistory.
const earlierHeading = "Earlier turns:\n"

// estimatedTokens estimates the tokens of n bytes of prompt text (3.5
// bytes a token: English, code and JSON in o200k_base).
func estimatedTokens(n int) int { return n * 2 / 7 }

// wholeTurns is how many of h's first turns c sends whole. The answer for
// a turn depends only on the turns up to it, not on how records are
// written, so a turn sent whole stays whole in every later request.
func (c CoalescedHistory) wholeTurns(h *History) int {
	limit := c.CachePrefix
	if limit == 0 {
		limit = DefaultCachePrefix
	}
	if limit < 0 {
		return 0
	}
	size := len(h.System) + len(h.FirstMessage())
	k := 0
	for ; k < len(h.Turns); k++ {
		t := h.Turns[k]
		size += len(t.Answer) + len(t.Feedback)
		if estimatedTokens(size) >= limit {
			break
		}
	}
	return k
}

// Messages implements HistoryStrategy.
func (c CoalescedHistory) Messages(h *History) []llm.Message {
	whole := c.wholeTurns(h)
	msgs := []llm.Message{llm.UserText(h.FirstMessage())}
	if len(h.Turns) == 0 {
		return msgs
	}
	for _, t := range h.Turns[:whole] {
		msgs = append(msgs, llm.AssistantText(t.Answer), llm.UserText(t.Feedback))
	}
	if whole == len(h.Turns) {
		last := h.Turns[whole-1]
		msgs[len(msgs)-1] = llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.Text{Text: last.Feedback, Cache: true}}}
		return msgs
	}
	// the last user message: the last whole turn's feedback (or the
	// mission), the records, memory and the turn line
	msgs = msgs[:len(msgs)-1]
	later := h.Turns[whole:]
	blocks := make([]llm.Block, 0, len(later)+2)
	heading := earlierHeading
	if whole > 0 {
		// the feedback ends without a newline and stays as the previous
		// request sent it
		blocks = append(blocks, llm.Text{Text: h.Turns[whole-1].Feedback})
		heading = "\n" + heading
	} else {
		blocks = append(blocks, llm.Text{Text: h.Mission + "\n"})
	}
	for i, t := range later {
		text := turnRecord(t)
		if i == 0 {
			text = heading + text
		}
		blocks = append(blocks, llm.Text{Text: text, Cache: i == len(later)-1})
	}
	var b strings.Builder
	b.WriteString("Memory: ")
	if len(h.Memory) == 0 {
		b.WriteString("(empty)")
	}
	for i, e := range h.Memory {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.String())
	}
	if l := h.nextLine(); l != "" {
		b.WriteString("\n" + l)
	}
	if p := later[len(later)-1].Plan; p != "" {
		b.WriteString("\n\n" + p)
	}
	blocks = append(blocks, llm.Text{Text: b.String()})
	if whole == 0 {
		return []llm.Message{{Role: llm.RoleUser, Content: blocks}}
	}
	return append(msgs, llm.Message{Role: llm.RoleUser, Content: blocks})
}

// turnRecord is the record of a turn in CoalescedHistory: its number and
// a space, then one line per tool call and its Report (for a HistoryTurn
// without one, its prints and "=> " or "Error: "), ending with a newline
// (a provider may join the blocks without one).
func turnRecord(t HistoryTurn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d ", t.Number)
	if len(t.ToolCalls) > 0 {
		for _, c := range t.ToolCalls {
			b.WriteString(c + "\n")
		}
	}
	switch {
	case t.Report != "":
		b.WriteString(t.Report)
	default:
		if len(t.Prints) > 0 {
			b.WriteString("Output:\n")
			for _, p := range t.Prints {
				b.WriteString(p + "\n")
			}
		}
		if t.Error != "" {
			b.WriteString("Error: " + t.Error)
		} else {
			b.WriteString("=> " + t.Result)
		}
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	return b.String()
}

// historyOf collects a run's History for a HistoryStrategy; nil when the
// run is not compressed.
type historyOf struct {
	h   History
	sec *secrets
	lim PromptLimit
}

// newHistory starts the history of a compressed run of a from the body of
// its first message (missionBody); nil when a does not compress.
func (a *Agent) newHistory(body string, sec *secrets) *historyOf {
	if !a.spec.Compression {
		return nil
	}
	h := History{Mission: sec.scrub(body), MaxTurns: a.maxTurns(), single: a.singleTurn()}
	if a.spec.SystemPrompt.LanguageSpecFunc == nil {
		h.System = a.sysPrompt()
	}
	return &historyOf{h: h, sec: sec, lim: a.promptLimit()}
}

// strategy is the agent's HistoryStrategy (CoalescedHistory by default).
func (a *Agent) strategy() HistoryStrategy {
	if a.spec.HistoryStrategy != nil {
		return a.spec.HistoryStrategy
	}
	return CoalescedHistory{}
}

// add records a played turn: rec as the trace holds it, its report and the
// plan's state after it (HistoryTurn), the value its program ended with
// (when it succeeded) and memory after it.
func (ho *historyOf) add(rec *messages.Turn, report, plan string, value lisp.Value, mem map[string]any) {
	sec := ho.sec
	t := HistoryTurn{Number: rec.Number, Answer: rec.Raw, Program: rec.Program, Feedback: rec.Feedback, Report: report, Plan: plan}
	for _, c := range rec.ToolCalls {
		t.ToolCalls = append(t.ToolCalls, toolCallLine(sec, c, ho.lim))
	}
	for _, p := range rec.Prints {
		t.Prints = append(t.Prints, capLine(sec.scrub(p)))
	}
	if rec.Error != "" {
		t.Error = capLine(sec.scrub(firstLine(strings.TrimPrefix(rec.Error, "Error: "))))
	} else {
		t.Result, _ = resultPreview(sec, value, ho.lim)
		t.Result = cut(t.Result, maxSummaryPreview)
	}
	ho.h.Turns = append(ho.h.Turns, t)
	ho.h.Memory = memoryEntries(sec, mem)
}

// messages renders the request of turn n with strategy s.
func (ho *historyOf) messages(s HistoryStrategy, n int) []llm.Message {
	ho.h.Next = n
	return s.Messages(&ho.h)
}

// toolCallLine writes a tool call as the program made it, args previewed
// and firewalled: (tool/name {:k v}), and " failed: ..." when it failed.
func toolCallLine(sec *secrets, c messages.ToolCall, lim PromptLimit) string {
	var b strings.Builder
	b.WriteString("(tool/" + c.Name)
	if len(c.Args) > 0 {
		// the args as the program wrote them: keyword keys, values previewed
		b.WriteString(" {")
		for i, k := range sortedKeys(c.Args) {
			if i > 0 {
				b.WriteByte(' ')
			}
			arg := "?"
			if v, err := lisp.FromGo(c.Args[k]); err == nil {
				arg, _ = lisp.Preview(v, lisp.PreviewOptions{MaxItems: lim.List, MaxString: 80, FloatDigits: 10, Scrub: sec.hook()})
			}
			b.WriteString(":" + sec.redact(k, true) + " " + arg)
		}
		b.WriteByte('}')
	}
	b.WriteByte(')')
	line := b.String()
	if c.Error != "" {
		line += " failed: " + firstLine(c.Error)
	}
	return capLine(sec.scrub(line))
}

// maxSummaryPreview bounds the result preview of an earlier turn: the
// model saw the whole preview in that turn's feedback, and memory lists
// what was kept.
const maxSummaryPreview = 200

// capLine cuts a line of model-bound text (scrubbed first) at maxPrintLine
// bytes.
func capLine(s string) string { return cut(s, maxPrintLine) }

// cut cuts model-bound text (scrubbed first) at n bytes, on a character
// boundary, and marks the cut with "...".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// memoryEntries lists memory for the model: names sorted and redacted,
// each value's type and size (firewalled names: type only).
func memoryEntries(sec *secrets, mem map[string]any) []MemoryEntry {
	out := make([]MemoryEntry, 0, len(mem))
	for _, k := range sortedKeys(mem) {
		v := mem[k]
		e := MemoryEntry{Name: sec.redact(k, true), Type: lisp.TypeName(v)}
		if !signature.IsFirewalled(k) {
			e.Size = valueSize(v)
		}
		out = append(out, e)
	}
	return out
}

// valueSize is the size of a memory value as the model is told it: a
// vector's or set's element count and element type ("2000 maps", "693
// integers"; "items" when the elements differ in type or are nil), a map's
// entries ("4 entries"), a string's characters ("4 chars"); "" for other
// values.
func valueSize(v any) string {
	switch x := v.(type) {
	case *lisp.Vector:
		return plural(x.Len(), elemKind(x.Len(), x.At))
	case *lisp.Set:
		items := x.Items()
		return plural(len(items), elemKind(len(items), func(i int) lisp.Value { return items[i] }))
	case string:
		return plural(utf8.RuneCountInString(x), "char")
	}
	if m, ok := lisp.AsMap(v); ok {
		return plural(m.Len(), "entry")
	}
	return ""
}

// elemKind names the elements of a collection of n elements, at(i) the
// i-th, in the singular: their lisp.TypeName when they all share it,
// "item" when they differ, are nil or there are none.
func elemKind(n int, at func(int) lisp.Value) string {
	kind := ""
	for i := range n {
		t := lisp.TypeName(at(i))
		if t == "nil" || t == "unknown" || t == "reduced" || (kind != "" && t != kind) {
			return "item"
		}
		kind = t
	}
	if kind == "" {
		return "item"
	}
	return kind
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "x") {
		return fmt.Sprintf("%d %ses", n, what)
	}
	if strings.HasSuffix(what, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(what, "y"))
	}
	return fmt.Sprintf("%d %ss", n, what)
}

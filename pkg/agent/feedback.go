package agent

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp"
)

// Turn feedback: the text sent back to the model after each turn. The
// exact wording is part of the package's contract (tests pin it).

// BoundaryReminder is sent when an answer holds no program.
const BoundaryReminder = "Your mission is still active. Please provide a PTC-Lisp program in a ```clojure block, or call (return ...) to finish."

const maxPrintLine = 512

// turnLine tells the model which turn comes next.
// retryTurnNote tells the model that its next turn is a retry turn
// (retry_turns): granted only to fix the return that failed validation.
const retryTurnNote = "You get one more turn only to fix this return: call (return ...) with a value of the expected type."

func turnLine(next, max int) string {
	var buf [160]byte
	return string(appendTurnLine(buf[:0], next, max))
}

// appendTurnLine appends turnLine(next, max) to b.
func appendTurnLine(b []byte, next, max int) []byte {
	b = append(b, "Turn "...)
	b = strconv.AppendInt(b, int64(next), 10)
	b = append(b, " of "...)
	b = strconv.AppendInt(b, int64(max), 10)
	b = append(b, " ("...)
	b = strconv.AppendInt(b, int64(max-next), 10)
	b = append(b, " remaining)"...)
	if next == max {
		b = append(b, "\nThis is your last turn: your program must call (return ...) or (fail ...)."...)
	}
	return b
}

// printsBlock renders println output (each line scrubbed, then capped).
func printsBlock(b *strings.Builder, sec *secrets, prints []string) {
	if len(prints) == 0 {
		return
	}
	b.WriteString("Output:\n")
	for _, p := range prints {
		p = sec.scrub(p)
		if len(p) > maxPrintLine {
			// cut on a character boundary: the prompt stays valid UTF-8
			p = strings.ToValidUTF8(p[:maxPrintLine], "") + "... (truncated, use println selectively)"
		}
		b.WriteString(p)
		b.WriteByte('\n')
	}
}

// resultFeedback renders a successful non-final turn: its report with the
// memory line, then the turn line.
func resultFeedback(sec *secrets, res *lisp.Result, lim PromptLimit, warnings []string, next, max int) string {
	return resultReport(sec, res, lim, warnings, forFeedback) + turnLine(next, max)
}

// reportUse is what a successful turn's report is rendered for.
type reportUse int

const (
	// forFeedback: the turn's feedback, the result labeled "Result: ",
	// with the memory line
	forFeedback reportUse = iota
	// forRecord: the turn's record in a compressed history
	// (HistoryTurn.Report), the result labeled "=> " (the REPL's
	// convention, shorter in a record every request repeats), without the
	// memory line (the history lists memory once)
	forRecord
)

// resultReport renders what a successful turn did: println output, the
// firewalled and truncated result preview with omission notes, memory
// names (for the feedback), the map-merge note and tool warnings. Every
// part that carries data is scrubbed before it is cut (the labels are not:
// a secret equal to "Result" must not rewrite the layout).
func resultReport(sec *secrets, res *lisp.Result, lim PromptLimit, warnings []string, use reportUse) string {
	var b strings.Builder
	printsBlock(&b, sec, res.Prints)
	text, omitted := resultPreview(sec, res.Value, lim)
	if use == forRecord {
		b.WriteString("=> ")
	} else {
		b.WriteString("Result: ")
	}
	b.WriteString(text)
	b.WriteByte('\n')
	if _, isMap := res.Value.(*lisp.Map); omitted > 0 && !isMap {
		b.WriteString("Only a preview is shown and the value is not kept; to use the full data in the next program, return a map such as {:items ...} (its entries are stored in memory).\n")
	}
	for _, n := range omissionNotes(sec, res, lim) {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	if names := memoryNames(res.Memory); use == forFeedback && len(names) > 0 {
		for i, n := range names {
			names[i] = sec.redact(n, true) // a name can be a firewalled value (a map key merged into memory)
		}
		fmt.Fprintf(&b, "Memory: %s\n", strings.Join(names, ", "))
	}
	if keys := mergedKeys(sec, res); len(keys) > 0 {
		b.WriteString(MapMemoryNote(keys))
		b.WriteByte('\n')
	}
	writeWarnings(&b, sec, warnings)
	return b.String()
}

// resultPreview is the firewalled preview of a program's value under lim,
// and the number of items it leaves out of a top-level collection.
func resultPreview(sec *secrets, v lisp.Value, lim PromptLimit) (string, int) {
	text, omitted := lisp.Preview(v, lisp.PreviewOptions{MaxItems: lim.List, MaxString: lim.String, FloatDigits: 10, Scrub: sec.hook()})
	return sec.scrub(text), omitted
}

// omissionNotes tells the model where the full data of a truncated list
// lives: a map result's entries are in memory, readable as ctx/key.
func omissionNotes(sec *secrets, res *lisp.Result, lim PromptLimit) []string {
	m, ok := res.Value.(*lisp.Map)
	if !ok {
		return nil
	}
	var notes []string
	m.Each(func(k, v lisp.Value) bool {
		name := lisp.Str(k)
		if kw, ok := k.(*lisp.Keyword); ok {
			name = kw.Name
		}
		if _, inMem := res.Memory[name]; !inMem {
			if _, inMem = res.Memory[strings.ReplaceAll(name, "-", "_")]; !inMem {
				return true
			}
		}
		if strings.HasPrefix(name, "_") {
			return true
		}
		n := collLen(v)
		if n > lim.List {
			notes = append(notes, fmt.Sprintf("%d more items omitted. Full data available in ctx/%s", n-lim.List, sec.redact(name, true)))
		}
		return true
	})
	return notes
}

// MemoryRule is the memory rule in one line, for people (the REPL's :ref)
// as for models (a turn's feedback, MapMemoryNote).
const MemoryRule = "A map a program ends with (without return) is merged into memory key by key: " +
	"ending with (frequencies (map :tier custs)) stores one name per tier. To keep a map whole, end with {:name the-map} or (def name the-map)."

// MapMemoryNote is the line of a turn's feedback saying that the map the
// program ended with became the memory names keys.
func MapMemoryNote(keys []string) string {
	return "The result map was merged into memory key by key (" + strings.Join(keys, ", ") +
		"). To keep a map whole, end with {:name the-map} or (def name the-map)."
}

// mergedKeys returns the names the map a program ended with added to
// memory, sorted, firewalled ones redacted, when the map looks like data
// rather than named results: some key is not a keyword (the keys of
// (frequencies (map :tier custs)) are the tiers). A map of keywords,
// {:results ...}, is the usual way to keep results and gets no note.
func mergedKeys(sec *secrets, res *lisp.Result) []string {
	m, ok := res.Value.(*lisp.Map)
	if !ok {
		return nil
	}
	var keys []string
	data := false
	m.Each(func(k, _ lisp.Value) bool {
		name := lisp.Str(k)
		if kw, ok := k.(*lisp.Keyword); ok {
			name = kw.Name
		} else {
			data = true
		}
		for _, n := range []string{name, strings.ReplaceAll(name, "-", "_")} {
			if _, in := res.Memory[n]; in {
				keys = append(keys, sec.redact(n, true))
				break
			}
		}
		return true
	})
	if !data {
		return nil
	}
	slices.Sort(keys)
	return keys
}

func collLen(v lisp.Value) int {
	switch x := v.(type) {
	case *lisp.Vector:
		return x.Len()
	case *lisp.Set:
		return x.Len()
	}
	return 0
}

func memoryNames(mem map[string]lisp.Value) []string {
	names := make([]string, 0, len(mem))
	for k := range mem {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func writeWarnings(b *strings.Builder, sec *secrets, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	b.WriteString("Warnings:\n")
	for _, w := range warnings {
		b.WriteString("- ")
		b.WriteString(sec.scrub(w))
		b.WriteByte('\n')
	}
}

// errorFeedback renders a failed turn: its report, then the turn line.
func errorFeedback(sec *secrets, prints []string, errText string, warnings []string, next, max int) string {
	return errorReport(sec, prints, errText, warnings) + turnLine(next, max)
}

// errorReport renders what a failed turn did: println output, one "Error:"
// line with the position, caret snippet and hint, and warnings.
func errorReport(sec *secrets, prints []string, errText string, warnings []string) string {
	var b strings.Builder
	printsBlock(&b, sec, prints)
	b.WriteString("Error: ")
	b.WriteString(sec.scrub(strings.TrimPrefix(errText, "Error: ")))
	b.WriteByte('\n')
	writeWarnings(&b, sec, warnings)
	return b.String()
}

// lispErrorText renders a *lisp.Error for the model: "line:col: msg", the
// caret snippet and a "Hint:" line.
func lispErrorText(e *lisp.Error) string {
	d := e.Detail()
	if i := strings.LastIndex(d, "\nhint: "); i >= 0 {
		d = d[:i] + "\nHint: " + d[i+len("\nhint: "):]
	}
	return d
}

// validationText renders a return-validation failure.
func validationText(verr error, want string) string {
	return "Return type validation failed:\n" + strings.TrimSpace(verr.Error()) + "\nExpected: " + want
}

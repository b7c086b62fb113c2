package core

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/signature"
)

// PrintOptions controls a printer. The zero value prints like pr-str with
// the firewall on and no limits.
type PrintOptions struct {
	// Raw prints strings without quotes, nil as "" and special floats as
	// Infinity/-Infinity/NaN at the top level (str semantics).
	Raw bool
	// NoFirewall shows the values of "_"-prefixed map keys (host-side
	// printing only; never use for text that reaches a model).
	NoFirewall bool
	// MaxItems caps the items printed per collection (0: no cap).
	MaxItems int
	// MaxString caps the runes printed per string (0: no cap).
	MaxString int
	// FloatDigits caps the decimals of floats (0: shortest round-trip).
	FloatDigits int
	// MaxLen stops printing after about this many bytes (0: no cap).
	MaxLen int
	// Scrub, when set, rewrites every string and keyword name before it is
	// printed and before any cut (the agent's firewall hides firewalled
	// text here); key is true for a map key (a string or keyword printed in
	// key position). A result equal to FirewalledText is printed bare, as a
	// firewalled map value is.
	Scrub func(s string, key bool) string
}

// FirewalledText is what printers show in place of a firewalled value.
const FirewalledText = signature.FirewalledText

// PrStr prints v readably (pr-str), firewall on.
func PrStr(v Value) string { return Sprint(v, PrintOptions{}) }

// Str prints v as str does: strings raw, nil as "".
func Str(v Value) string { return Sprint(v, PrintOptions{Raw: true}) }

// Sprint prints v with opts.
func Sprint(v Value, opts PrintOptions) string {
	p := printer{opts: opts}
	if opts.Raw {
		switch x := v.(type) {
		case nil:
			return ""
		case string:
			if opts.Scrub != nil {
				return opts.Scrub(x, false)
			}
			return x
		case float64:
			switch {
			case math.IsInf(x, 1):
				return "Infinity"
			case math.IsInf(x, -1):
				return "-Infinity"
			case math.IsNaN(x):
				return "NaN"
			}
		case *Regex:
			return x.Source // (str #"a+") is "a+", as Java's Pattern.toString
		}
	}
	p.print(v)
	return p.b.String()
}

// PreviewOptions limits a model-facing preview. Zero fields take the seed
// defaults: 5 items per list, 1000 chars per string.
type PreviewOptions struct {
	MaxItems    int
	MaxString   int
	FloatDigits int
	// MaxLen stops the preview after about this many bytes (default 64 KiB),
	// so values that share structure cannot explode.
	MaxLen int
	// Scrub is PrintOptions.Scrub.
	Scrub func(s string, key bool) string
}

// Preview prints v for a model: firewalled, collections cut to MaxItems
// (nested ones end in "..."), strings cut to MaxString runes plus "...".
// When the top-level collection is cut, omitted is the number of items
// left out and the text ends with " ... (N more items omitted)".
func Preview(v Value, opts PreviewOptions) (text string, omitted int) {
	if opts.MaxItems <= 0 {
		opts.MaxItems = 5
	}
	if opts.MaxString <= 0 {
		opts.MaxString = 1000
	}
	if opts.MaxLen <= 0 {
		opts.MaxLen = 64 << 10
	}
	p := printer{opts: PrintOptions{MaxItems: opts.MaxItems, MaxString: opts.MaxString, FloatDigits: opts.FloatDigits, MaxLen: opts.MaxLen, Scrub: opts.Scrub}}
	n := 0
	switch x := MapValue(v).(type) {
	case *Vector:
		n = x.Len()
	case *Set:
		n = x.Len()
	case *Map:
		n = x.Len()
	}
	p.print(v)
	if n > opts.MaxItems {
		omitted = n - opts.MaxItems
		return p.b.String() + " ... (" + strconv.Itoa(omitted) + " more items omitted)", omitted
	}
	return p.b.String(), 0
}

type printer struct {
	b     strings.Builder
	opts  PrintOptions
	inKey bool // printing a map key (for Scrub)
}

func (p *printer) full() bool { return p.opts.MaxLen > 0 && p.b.Len() > p.opts.MaxLen }

func (p *printer) print(v Value) {
	if p.full() {
		return
	}
	switch x := MapValue(v).(type) {
	case nil:
		p.b.WriteString("nil")
	case bool:
		if x {
			p.b.WriteString("true")
		} else {
			p.b.WriteString("false")
		}
	case int64:
		p.b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		p.b.WriteString(FormatFloat(x, p.opts.FloatDigits))
	case string:
		p.str(x)
	case *Keyword:
		name := x.Name
		if p.opts.Scrub != nil {
			if name = p.opts.Scrub(name, p.inKey); name == FirewalledText {
				p.b.WriteString(FirewalledText)
				return
			}
		}
		p.b.WriteByte(':')
		p.b.WriteString(name)
	case *Vector:
		p.seq("[", "]", x.Items(), x.Len())
	case *LazySeq:
		items, done := x.Snapshot()
		p.seq("[", "]", items, len(items))
		if !done {
			s := p.b.String()
			p.b.Reset()
			p.b.WriteString(strings.TrimSuffix(s, "]"))
			if len(items) > 0 {
				p.b.WriteByte(' ')
			}
			p.b.WriteString("...]")
		}
	case *Set:
		es := entriesOf(x.M)
		keys := make([]Value, len(es))
		for i, e := range es {
			keys[i] = e.Key
		}
		p.seq("#{", "}", keys, x.Len())
	case *Map:
		p.b.WriteByte('{')
		for i, e := range entriesOf(x) {
			if p.opts.MaxItems > 0 && i >= p.opts.MaxItems {
				p.b.WriteString(" ...")
				break
			}
			if i > 0 {
				p.b.WriteByte(' ')
			}
			p.inKey = true
			p.print(e.Key)
			p.inKey = false
			p.b.WriteByte(' ')
			if !p.opts.NoFirewall && isFirewalled(e.Key) {
				p.b.WriteString(FirewalledText)
			} else {
				p.print(e.Val)
			}
		}
		p.b.WriteByte('}')
	case *Closure:
		p.b.WriteString("#fn[")
		p.b.WriteString(strings.Join(x.Proto.ParamNames, " "))
		p.b.WriteByte(']')
	case *Builtin:
		p.b.WriteString("#<builtin>")
	case *Var:
		p.b.WriteString("#'")
		p.b.WriteString(x.Name)
	case *Regex:
		p.b.WriteString("#\"")
		p.b.WriteString(x.Source)
		p.b.WriteByte('"')
	case *Reduced:
		p.b.WriteString("#reduced ")
		p.print(x.Val)
	default:
		p.b.WriteString("#<unknown>")
	}
}

// sortedMap is a map as printing reads it: its entries in key order.
// The order of keys that are collections is their printed form, and a
// host record's entries are made on first need, so maps sit in the layers
// above printing and printing reads them through this interface.
type sortedMap interface {
	Entries() []MapEntry
}

// entriesOf returns m's entries in key order.
func entriesOf(m sortedMap) []MapEntry { return m.Entries() }

func isFirewalled(k Value) bool {
	switch x := k.(type) {
	case string:
		return strings.HasPrefix(x, "_")
	case *Keyword:
		return strings.HasPrefix(x.Name, "_")
	}
	return false
}

func (p *printer) seq(open, close string, items []Value, n int) {
	p.b.WriteString(open)
	for i, it := range items {
		if p.opts.MaxItems > 0 && i >= p.opts.MaxItems {
			p.b.WriteString(" ...")
			break
		}
		if p.full() {
			break
		}
		if i > 0 {
			p.b.WriteByte(' ')
		}
		p.print(it)
	}
	p.b.WriteString(close)
}

func (p *printer) str(s string) {
	if p.opts.Scrub != nil {
		if s = p.opts.Scrub(s, p.inKey); s == FirewalledText {
			p.b.WriteString(FirewalledText)
			return
		}
	}
	if p.opts.MaxString > 0 && utf8.RuneCountInString(s) > p.opts.MaxString {
		rs := []rune(s)
		s = string(rs[:p.opts.MaxString]) + "..."
	}
	p.b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			p.b.WriteString(`\"`)
		case '\\':
			p.b.WriteString(`\\`)
		case '\n':
			p.b.WriteString(`\n`)
		case '\t':
			p.b.WriteString(`\t`)
		case '\r':
			p.b.WriteString(`\r`)
		default:
			p.b.WriteByte(c)
		}
	}
	p.b.WriteByte('"')
}

// FormatFloat prints like Clojure/Java: shortest round-trip, always with a
// '.' or an exponent; scientific notation outside [1e-3, 1e7). digits > 0
// caps the decimals (model-facing output).
func FormatFloat(f float64, digits int) string {
	switch {
	case math.IsInf(f, 1):
		return "##Inf"
	case math.IsInf(f, -1):
		return "##-Inf"
	case math.IsNaN(f):
		return "##NaN"
	}
	if digits > 0 {
		r := math.Pow(10, float64(digits))
		if g := math.Round(f*r) / r; !math.IsInf(g, 0) && !math.IsNaN(g) {
			f = g
		}
	}
	a := math.Abs(f)
	if f == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.ContainsAny(s, ".") {
			s += ".0"
		}
		if f == 0 && math.Signbit(f) {
			return "-0.0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64)
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// TypeName returns the name used in error messages for v's type.
func TypeName(v Value) string {
	switch v.(type) {
	case nil:
		return "nil"
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		return "float"
	case string:
		return "string"
	case *Keyword:
		return "keyword"
	case *Vector:
		return "vector"
	case *Map, HostMap:
		return "map"
	case *Set:
		return "set"
	case *Closure, *Builtin:
		return "function"
	case *Regex:
		return "regex"
	case *LazySeq:
		return "lazy sequence"
	case *Var:
		return "var"
	case *Reduced:
		return "reduced"
	}
	return "unknown"
}

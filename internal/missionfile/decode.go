package missionfile

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ptcfleet/ptc/pkg/signature"
)

// Bounds of a mission file's contents.
const (
	// maxNesting bounds how deeply the plain data of a mission file
	// (context, llm_opts, compiled inputs) may nest.
	maxNesting = 64
	// maxValues bounds the values decoded from one file, aliases expanded:
	// a few lines of YAML anchors can otherwise stand for billions.
	maxValues = 1 << 20
)

// FieldError is an error at one place of a mission file: its line (0 when
// unknown) and field path ("agent.sub_agents.helper.max_turns").
type FieldError struct {
	Line int
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// internalFields are wire fields set by Build, not by a person.
var internalFields = map[string]bool{"v": true, "kind": true, "context_ref": true, "context_digest": true, "created_at": true, "deadline": true}

var (
	durationType = reflect.TypeFor[time.Duration]()
	anyMapType   = reflect.TypeFor[map[string]any]()
)

// field is one decodable field of a struct type: its mission-file name
// (the msgpack tag of the wire type) and index.
type field struct {
	name  string
	index []int
}

// fieldsOf lists the mission-file fields of struct type t in declaration
// order; embedded structs contribute their fields.
func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			for _, f := range fieldsOf(sf.Type) {
				out = append(out, field{f.name, append([]int{i}, f.index...)})
			}
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("msgpack"), ",")
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		if name == "-" || internalFields[name] {
			continue
		}
		out = append(out, field{name, []int{i}})
	}
	return out
}

// TypeName is the mission-file name of a field's type, as docs/missions.md
// and error messages write it.
func TypeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t == anyMapType:
		return "map"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return TypeName(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int64:
		return "int"
	case reflect.Float64:
		return "float"
	case reflect.Slice:
		return "list of " + TypeName(t.Elem())
	case reflect.Map:
		return "map of " + TypeName(t.Elem())
	case reflect.Struct:
		return "object"
	case reflect.Interface:
		return "any"
	}
	return t.String()
}

// decoder decodes a YAML node tree into the wire types, by their msgpack
// field names.
type decoder struct {
	// lines maps the path of every object decoded to its line, for the
	// checks made after decoding.
	lines map[string]int
	// values counts the values decoded, against maxValues.
	values int
	// errs collects the errors of the fields decoded so far: a file's
	// mistakes are reported all at once, not one per run. Only going over
	// maxValues stops decoding.
	errs []error
}

// collect records err of one field or element and reports whether
// decoding may go on (false: err is the bound on values, returned as is).
func (d *decoder) collect(err error) bool {
	if d.values > maxValues {
		return false
	}
	d.errs = append(d.errs, err)
	return true
}

// count counts one value decoded.
func (d *decoder) count(n *yaml.Node, path string) error {
	d.values++
	if d.values > maxValues {
		return d.errf(n, path, "more than %d values (anchors and aliases included)", maxValues)
	}
	return nil
}

func (d *decoder) errf(n *yaml.Node, path, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &FieldError{Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// decode decodes n into v (settable).
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	n = resolve(n)
	if err := d.count(n, path); err != nil {
		return err
	}
	if isNull(n) {
		v.SetZero()
		return nil
	}
	t := v.Type()
	switch {
	case t == durationType:
		s, err := d.scalar(n, path, "!!str", "a duration string such as \"30s\" or \"5m\"")
		if err != nil {
			return err
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			return d.errf(n, path, "%q is not a duration (write e.g. \"30s\", \"5m\", or \"-1s\" for no limit)", s)
		}
		v.SetInt(int64(dur))
		return nil
	case t == anyMapType:
		m, err := d.plainMap(n, &dataPath{base: path}, 0)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(m))
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if err := d.decode(n, p.Elem(), path); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.String:
		if n.Kind == yaml.SequenceNode && signatureFields[lastName(path)] {
			return d.signatureData(n, v, path)
		}
		s, err := d.scalar(n, path, "!!str", "a string")
		if err != nil {
			return err
		}
		v.SetString(s)
		return nil
	case reflect.Bool:
		// YAML 1.2: only true and false
		if _, err := d.scalar(n, path, "!!bool", "a boolean (true or false)"); err != nil {
			return err
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			return d.errf(n, path, "%q is not a boolean", n.Value)
		}
		v.SetBool(b)
		return nil
	case reflect.Int, reflect.Int64:
		s, err := d.scalar(n, path, "!!int", "an integer")
		if err != nil {
			return err
		}
		var i int64
		if err := n.Decode(&i); err != nil {
			return d.errf(n, path, "%q is not an integer", s)
		}
		if v.OverflowInt(i) {
			return d.errf(n, path, "%d is out of range", i)
		}
		v.SetInt(i)
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errf(n, path, "expected a list, got %s", describe(n))
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil && !d.collect(err) {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return d.errf(n, path, "expected a map, got %s", describe(n))
		}
		if d.lines != nil {
			d.lines[path] = n.Line
		}
		m := reflect.MakeMapWithSize(t, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := d.key(n.Content[i], path)
			if err != nil {
				d.collect(err)
				continue
			}
			if m.MapIndex(reflect.ValueOf(k)).IsValid() {
				d.collect(d.errf(n.Content[i], join(path, k), "listed twice"))
				continue
			}
			ev := reflect.New(t.Elem()).Elem()
			if err := d.decode(n.Content[i+1], ev, join(path, k)); err != nil {
				if !d.collect(err) {
					return err
				}
				continue
			}
			m.SetMapIndex(reflect.ValueOf(k), ev)
		}
		v.Set(m)
		return nil
	case reflect.Struct:
		return d.object(n, v, path)
	}
	return d.errf(n, path, "cannot decode into %s", t)
}

// object decodes a mapping into a struct, rejecting unknown and repeated
// fields.
func (d *decoder) object(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, path, "expected an object (a map of fields), got %s", describe(n))
	}
	if d.lines != nil {
		d.lines[path] = n.Line
	}
	fields := fieldsOf(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := d.key(n.Content[i], path)
		if err != nil {
			d.collect(err)
			continue
		}
		idx := slices.IndexFunc(fields, func(f field) bool { return f.name == k })
		if idx < 0 {
			msg := "unknown field"
			if s := suggest(k, fields); s != "" {
				msg += " (did you mean " + s + "?)"
			} else {
				names := make([]string, len(fields))
				for j, f := range fields {
					names[j] = f.name
				}
				msg += " (known: " + strings.Join(names, ", ") + ")"
			}
			d.collect(d.errf(n.Content[i], join(path, k), "%s", msg))
			continue
		}
		if seen[k] {
			d.collect(d.errf(n.Content[i], join(path, k), "listed twice"))
			continue
		}
		seen[k] = true
		if err := d.decode(n.Content[i+1], v.FieldByIndex(fields[idx].index), join(path, k)); err != nil && !d.collect(err) {
			return err
		}
	}
	return nil
}

func (d *decoder) key(n *yaml.Node, path string) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return "", d.errf(n, path, "keys must be strings, got %s", describe(n))
	}
	return n.Value, nil
}

// scalar returns a scalar's text, requiring its YAML tag.
func (d *decoder) scalar(n *yaml.Node, path, tag, want string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != tag {
		return "", d.errf(n, path, "expected %s, got %s", want, describe(n))
	}
	return n.Value, nil
}

// describe names what a node holds, for errors.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	case yaml.ScalarNode:
		kind := strings.TrimPrefix(n.Tag, "!!")
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		return fmt.Sprintf("%s %q", kind, v)
	}
	return "nothing"
}

// dataPath is the path of a value inside plain data, built only when an
// error names it.
type dataPath struct {
	parent *dataPath
	base   string // the root: the field path of the data
	key    string
	index  int // -1 for a map key
}

func (p *dataPath) String() string {
	if p.parent == nil {
		return p.base
	}
	if p.index >= 0 {
		return fmt.Sprintf("%s[%d]", p.parent, p.index)
	}
	return join(p.parent.String(), p.key)
}

// plain converts a node to plain data: nil, bool, int64, float64, string,
// []any, map[string]any (YAML 1.2 core schema: only true/false are
// booleans; integers stay int64).
func (d *decoder) plain(n *yaml.Node, path *dataPath, depth int) (any, error) {
	n = resolve(n)
	d.values++
	if d.values > maxValues {
		return nil, d.errf(n, path.String(), "more than %d values (anchors and aliases included)", maxValues)
	}
	if depth > maxNesting {
		return nil, d.errf(n, path.String(), "nested deeper than %d levels", maxNesting)
	}
	switch n.Kind {
	case yaml.MappingNode:
		return d.plainMap(n, path, depth)
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := d.plain(c, &dataPath{parent: path, index: i}, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, nil
		case "!!bool":
			return n.Value == "true", nil
		case "!!int":
			if i, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
				return i, nil
			}
			var i int64
			if err := n.Decode(&i); err != nil {
				return nil, d.errf(n, path.String(), "integer %s does not fit in 64 bits", n.Value)
			}
			return i, nil
		case "!!float":
			if strings.Trim(n.Value, "+-0123456789_") == "" {
				return nil, d.errf(n, path.String(), "integer %s does not fit in 64 bits", n.Value)
			}
			f, err := strconv.ParseFloat(n.Value, 64)
			if err != nil {
				if err := n.Decode(&f); err != nil {
					return nil, d.errf(n, path.String(), "%q is not a number", n.Value)
				}
			}
			if math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, d.errf(n, path.String(), "%s is not a finite number", n.Value)
			}
			return f, nil
		case "!!str":
			return n.Value, nil
		}
		return nil, d.errf(n, path.String(), "unsupported value %s", describe(n))
	}
	return nil, d.errf(n, path.String(), "unsupported YAML node")
}

func (d *decoder) plainMap(n *yaml.Node, path *dataPath, depth int) (map[string]any, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, d.errf(n, path.String(), "expected a map, got %s", describe(n))
	}
	m := make(map[string]any, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn := resolve(n.Content[i])
		if kn.Kind != yaml.ScalarNode || isNull(kn) {
			return nil, d.errf(kn, path.String(), "keys must be strings, got %s", describe(kn))
		}
		k := kn.Value
		if _, dup := m[k]; dup {
			return nil, d.errf(kn, join(path.String(), k), "listed twice")
		}
		v, err := d.plain(n.Content[i+1], &dataPath{parent: path, key: k, index: -1}, depth+1)
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	return m, nil
}

// suggest returns the known field closest to name, if it is close enough
// to be a typo.
func suggest(name string, fields []field) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return signature.Closest(name, names)
}

// signatureFields are the string fields that hold a signature: written
// in signature syntax, or as a list in the data form (a Malli schema,
// signature.FromData), which is turned into the canonical syntax the
// wire carries.
var signatureFields = map[string]bool{"signature": true, "context_signature": true}

// lastName is the last field name of a path ("agent.signature" →
// "signature").
func lastName(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// signatureData decodes a signature written in the data form into its
// canonical syntax; an error names the place in the data.
func (d *decoder) signatureData(n *yaml.Node, v reflect.Value, path string) error {
	data, err := d.plain(n, &dataPath{base: path}, 0)
	if err != nil {
		return err
	}
	sig, err := signature.FromData(data)
	if err != nil {
		var se *signature.Error
		if errors.As(err, &se) && se.Path != "signature" {
			return d.errf(n, path+se.Path, "%s", se.Msg)
		}
		return d.errf(n, path, "%s", strings.TrimPrefix(err.Error(), "signature: "))
	}
	v.SetString(sig.String())
	return nil
}

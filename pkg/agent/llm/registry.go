package llm

import (
	"reflect"
	"slices"
)

// Registry maps model names to models.
// The agent passes one registry down the whole agent tree.
//
// A nil Registry means "no registry was given": looking a name up in it
// fails with llm_registry_required. A non-nil empty Registry fails with
// llm_not_found. A Registry is a plain map: build it before a run and do not
// modify it while runs read it (reads are safe concurrently).
type Registry map[string]Model

// Lookup returns the model registered under name. Errors are [*Error]s
// carrying a reason and a message:
//
//   - no registry (nil): llm_registry_required, "llm_registry required when using atom :name"
//   - name missing: llm_not_found, "LLM :name not found in registry"
//   - nil model (or a nil Func, or a nil pointer model): invalid_llm,
//     "Registry value for :name is not a function"
func (r Registry) Lookup(name string) (Model, error) {
	if r == nil {
		return nil, &Error{Kind: KindRegistryRequired, Name: name,
			Message: "llm_registry required when using atom :" + name}
	}
	m, ok := r[name]
	if !ok {
		return nil, &Error{Kind: KindNotFound, Name: name,
			Message: "LLM :" + name + " not found in registry"}
	}
	if isNilModel(m) {
		return nil, &Error{Kind: KindInvalid, Name: name,
			Message: "Registry value for :" + name + " is not a function", Err: errNilModel}
	}
	return m, nil
}

// Names returns the registered names, sorted.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// isNilModel reports whether m is nil or an interface holding a nil
// pointer, func, map, slice or channel.
func isNilModel(m Model) bool {
	if m == nil {
		return true
	}
	v := reflect.ValueOf(m)
	switch v.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Slice, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

package lisp

// registerAgg registers this group's builtins (see HANDOFF.md).
func registerAgg(r registry) {
}

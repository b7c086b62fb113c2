package lisp

// registerMath registers this group's builtins (see HANDOFF.md).
func registerMath(r registry) {
}

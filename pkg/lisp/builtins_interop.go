package lisp

// registerInterop registers this group's builtins (see HANDOFF.md).
func registerInterop(r registry) {
}

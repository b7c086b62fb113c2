package lisp

// registerStrings registers this group's builtins (see HANDOFF.md).
func registerStrings(r registry) {
}

package lisp

// registerHOF registers this group's builtins (see HANDOFF.md).
func registerHOF(r registry) {
}

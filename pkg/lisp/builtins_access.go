package lisp

// registerAccess registers this group's builtins (see HANDOFF.md).
func registerAccess(r registry) {
}

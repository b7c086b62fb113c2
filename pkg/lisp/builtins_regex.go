package lisp

// registerRegex registers this group's builtins (see HANDOFF.md).
func registerRegex(r registry) {
}

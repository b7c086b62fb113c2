package lisp

// registerMaps registers this group's builtins (see HANDOFF.md).
func registerMaps(r registry) {
}

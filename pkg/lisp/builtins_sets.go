package lisp

// registerSets registers this group's builtins (see HANDOFF.md).
func registerSets(r registry) {
}

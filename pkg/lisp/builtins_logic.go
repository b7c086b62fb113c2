package lisp

// registerLogic registers this group's builtins (see HANDOFF.md).
func registerLogic(r registry) {
}

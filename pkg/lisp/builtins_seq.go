package lisp

// registerSeq registers this group's builtins (see HANDOFF.md).
func registerSeq(r registry) {
}

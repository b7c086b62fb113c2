// Package agent runs SubAgents: an LLM writes PTC-Lisp programs that call
// tools and shrink data, the programs run in the pkg/lisp sandbox, and the
// loop feeds truncated, firewalled results back until a program calls
// (return v), validated against the agent's signature, or (fail v).
//
// # Defining and running
//
//	a, err := agent.New(agent.Spec{
//		Prompt:    "Find urgent emails for {{user}}",
//		Signature: "(user :string) -> {count :int, _ids [:int]}",
//		Tools:     map[string]agent.Tool{"list_emails": agent.FuncSig("(user :string) -> [:map]", listEmails)},
//	})
//	step, err := a.Run(ctx, agent.RunOptions{Model: model, Context: map[string]any{"user": "alice"}})
//
// A Spec is data (it converts to and from messages.AgentSpec with tools by
// name); New validates it and names the faulty field in an *Error of
// KindSpec. Run always returns a non-nil *messages.Step; on failure err is
// an *Error of KindRun carrying that Step, step.Fail is set, and errors.Is
// matches the reason sentinels (ErrMaxTurns, ErrMissionTimeout, ...).
// RunOptions.Context is a map or a previous *messages.Step (its Return is
// the context, its Signature types the data inventory; a failed Step gives
// chained_failure without calling the model). Then chains runs; RunPrompt
// is the one-call form.
//
// # Modes
//
// MaxTurns 1 without tools is single-turn mode: the program's value is the
// answer (validated; any error is final). Otherwise the loop ends only on
// return or fail; every turn's error, validation failure or code-less
// answer is fed back and costs a turn, and a map result merges into memory
// (the Memory Result Contract; a :return key is what the model sees).
//
// # The loop
//
// The system prompt is static per agent (role, a PTC-Lisp reference
// generated from the names pkg/lisp resolves, error recovery, output
// format; customizable through SystemPrompt), so providers can cache it.
// The first user message holds the data inventory, the callable tools,
// the planning-only catalog, the expected output and the expanded mission.
// ParseResponse extracts the code. Feedback (the exact texts are pinned by
// tests) shows println output, a preview truncated by PromptLimit with
// "N more items omitted. Full data available in ctx/k" notes, "_" fields as
// <Firewalled>, memory names only, tool coercion warnings and the turn line
// "Turn 3 of 5 (2 remaining)". Errors are one "Error: ..." with position,
// caret and Hint; ctx/fail carries them into the next program.
//
// Limits (defaults from messages.Default*; 0 means the default, negative
// unlimited): MaxTurns 5 (max_turns_exceeded), LLMTimeout 5 min per LLM
// attempt, ProgramTimeout 30 s per program run (its step budget derives
// from it), MissionTimeout 15 min for the whole tree (mission_timeout),
// MaxDepth 3 (max_depth_exceeded), TurnBudget 20 shared by the agent tree
// (turn_budget_exhausted), MemoryLimit 1 MiB (memory_limit_exceeded),
// ProgramMemory 64 MiB held by one program run (memory_limit, fed back to
// the model like any program error).
// LLMRetry retries infrastructure errors only (llm.Classify), with an
// injectable sleep; an LLM attempt that runs out of the LLM timeout is such
// an error. Logic errors use turns.
//
// # Tools and sub-agents
//
// A Tool is built with Func (no signature), FuncSig (explicit signature),
// Typed (signature derived from Go types), Skip (never validated) or
// Agent.AsTool. Signed tools get input coercion with warnings, input and
// output validation in the agent's mode (signature.Mode); strict mode
// requires every tool to be signed. Errors and panics become tool errors
// the model sees. A sub-agent tool runs the child with the call's args as
// context, inheriting the registry, resolving its model as child spec >
// bound (ToolOptions) > caller, sharing the turn budget and the mission
// deadline, one level deeper; the parent model sees only the child's
// public signature, and the child's Step is kept in ToolCall.Child.
// A tool may also start a child at run time with Spawn (the same path,
// from the ctx the tool received); SpawnTool is the spawn_agent tool over
// a catalogue of tool sets, a mission's spawn_agent on the wire.
//
// # Firewall
//
// "_" fields and inputs never reach a model: previews and inventory show
// <Firewalled>, templates render <Firewalled>, tool schemas drop them, and
// as defense in depth every value seen under a "_" key anywhere in the
// agent tree (inputs, tool results, sub-agent returns and failures,
// memory) is hidden in every model-bound text of the tree, before any cut.
// Go callers get everything (Step.Return, Step.Memory, the trace). The
// guarantee and its limits are in docs/firewall.md.
//
// # Observability
//
// Step.Usage sums tokens and requests over the tree; Step.Trace has one
// messages.Turn per turn (program, result, tool calls with child Steps,
// raw response, feedback; prompt messages and memory snapshots with
// RunOptions.Debug), kept per RunOptions.Trace. An Observer gets run,
// turn, llm and tool events (LogObserver logs them with zerolog).
// PreviewPrompt renders the first request without a model; PrintTrace and
// PrintChain draw the box layout.
//
// # Modes of output
//
// Spec.Output selects PTC-Lisp programs (the default, described above) or
// text mode (textmode.go: plain text or JSON answers with native tool
// calling). The loop's pieces are separate files so both modes and
// Compile share them: prompt building (prompt.go, langref.go), response
// parsing (parse.go), feedback (feedback.go), tool execution
// (toolexec.go) and the PTC-Lisp loop (loop.go).
//
// LLMTool / NewLLMTool (llmtool.go) wrap a text-mode agent as a tool (a
// prompt template and a signature; the calling agent's model by default);
// see docs/textmode.md. Compile (compile.go) asks the model once for a
// one-argument PTC-Lisp function that fulfils the signature, then runs it
// with no model (Compiled.Execute, AsTool); see docs/compile.md.
//
// # Concurrency
//
// An Agent is immutable and safe for concurrent runs. Tools may be called
// concurrently (pmap) and must be safe for that. Observers must be safe for
// concurrent use. A Step is not modified after Run returns.
package agent

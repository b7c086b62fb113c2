// Package fleet is the only code of this module that speaks NATS: it runs
// missions across a fleet of stateless workers on JetStream.
//
//   - Client (dispatch side): Submit a messages.Mission (idempotent by mission
//     id), Await or Run it, read its Status, Cancel it, Watch its progress
//     events.
//   - Worker: pulls missions with pull requests of its own (one pull per
//     free slot, their answers on one subscription, never Consume), runs them through a Runner (pkg/agent provides the real one),
//     publishes each result exactly once, heartbeats long missions, fences
//     zombies with compare-and-set status, dead-letters poison and exhausted
//     messages, and drains on Stop.
//   - ToolService: serves Go funcs as tools on micro endpoints
//     (tool.<service>.<tool>) with their signature in endpoint metadata.
//     Workers discover them through $SRV.INFO (Discover) and call them
//     through a mission's Toolbox, which refuses tools the mission does not
//     name and turns no-responders, timeouts and service errors into
//     *ToolError values whose text a model can read.
//   - EnsureStores creates or updates the streams, consumers and buckets
//     (docs/fleet.md has the layout), reading before it writes and retrying
//     transient failures, so every worker can call it at start on a cluster
//     in any state; with StoreConfig.VerifyOnly it only waits for them.
//   - Journal: each mission's model replies and tool results, recorded
//     and acknowledged before any call depending on them leaves the
//     worker, so a redelivered mission replays them instead of paying
//     again; tool calls carry an Idempotency-Key and a ToolService can run
//     each key at most once (DedupConfig); tool services report progress
//     on long calls, and a call that hears nothing for four intervals is
//     sent again with its key (WorkerConfig.ToolHeartbeat).
//
// The embedded NATS server lives in pkg/fleet/embedded so that importing this
// package does not link the server.
//
// Delivery is at least once; results are exactly once visible: the result
// subject keeps one message (MaxMsgsPerSubject 1, ExpectLastSequencePerSubject
// 0, Msg-Id "<submitter>.<id>/final"), a second writer reads the stored result back, and
// the mission is acked only after its result is stored, and a redelivered
// mission whose result exists is acked without running. The work in
// between is durable too: what a dead worker already received is replayed
// from the journal (docs/fleet.md, "Durable missions").
//
// Nothing here uses global state or a global logger: loggers are injected
// (zerolog), every blocking call takes a context, and connections belong to
// the caller.
package fleet

package messages

import (
	"strings"
	"time"
)

// StatusVersion is the version of the Status layout.
const StatusVersion = 1

// Mission states recorded in Status.State.
const (
	// StateQueued: submitted, not yet taken by a worker.
	StateQueued = "queued"
	// StateRunning: a worker holds it (Worker, Attempt set).
	StateRunning = "running"
	// StateAwaitingApproval: suspended at a tool call that waits for a
	// person's decision; no worker holds it (docs/approvals.md).
	StateAwaitingApproval = "awaiting_approval"
	// StateQuotaWait: taken while its submitter had as many missions
	// running as its running quota allows; parked until a short delay
	// passes, then queued again; no worker holds it (docs/fleet.md,
	// "Quotas").
	StateQuotaWait = "quota_wait"
	// StateSucceeded, StateFailed, StateCancelled and StateDead are terminal:
	// the result is stored on ResultSubject(submitter, id).
	StateSucceeded = "succeeded"
	StateFailed    = "failed"
	StateCancelled = "cancelled"
	StateDead      = "dead"
)

// States lists every mission state, in the order a mission goes through
// them.
func States() []string {
	return []string{StateQueued, StateRunning, StateAwaitingApproval, StateQuotaWait, StateSucceeded, StateFailed, StateCancelled, StateDead}
}

// TerminalState reports whether s is a state a mission never leaves.
func TerminalState(s string) bool {
	return s == StateSucceeded || s == StateFailed || s == StateCancelled || s == StateDead
}

// Status is the value of a mission's key in BucketStatus
// (StatusKey(submitter, id)), written by workers only. Every write is a
// compare-and-set on the key's revision, so a worker that lost the mission (a
// zombie) cannot overwrite the status of the worker that holds it now.
type Status struct {
	Version   int    `msgpack:"v"`
	MissionID string `msgpack:"mission_id"`
	// Submitter is who submitted the mission: the submitter token of
	// the subject it was submitted on.
	Submitter string `msgpack:"submitter,omitempty"`
	State     string `msgpack:"state"`
	// Attempt is the delivery attempt of the current or last run.
	Attempt int `msgpack:"attempt,omitempty"`
	// Worker is the id of the worker that runs or ran the mission.
	Worker string `msgpack:"worker,omitempty"`
	// StreamSeq is the MISSIONS stream sequence of the submitted message.
	StreamSeq uint64 `msgpack:"stream_seq,omitempty"`
	// CancelRequested is set when a cancel is carried out on a running
	// mission; workers check it on every heartbeat.
	CancelRequested bool   `msgpack:"cancel_requested,omitempty"`
	CancelReason    string `msgpack:"cancel_reason,omitempty"`
	// Suspensions counts the times the mission was suspended for
	// approval; a run after one replays the mission's journal.
	Suspensions int `msgpack:"suspensions,omitempty"`
	// JournalSeq is, while the mission awaits approval, the JOURNAL
	// sequence of the last journal message its runs wrote, as the
	// suspending run knew it (0: unknown). No run writes the journal
	// before it takes the mission from this status, so the run that does
	// reads the journal up to this message and asks for none after it.
	JournalSeq uint64 `msgpack:"journal_seq,omitempty"`
	// MissionDigest is, while the mission awaits approval, the SHA-256
	// (lower-case hex) of the mission's message body as the suspending
	// run took it: the body its parked message and a decision's wake
	// carry. A message that would take the mission from this status
	// with another body is not its wake, and no run takes it. Empty on
	// a status written without the field.
	MissionDigest string `msgpack:"mission_digest,omitempty"`
	// ClaimSeq is the StreamResults sequence of the claim marker
	// (ClaimSubject) of the run that wrote this status, 0 for a run that
	// wrote none (the mission's first claim, or a layout whose results
	// stream holds no markers). A run that takes the mission from a
	// status without writing a marker (a resumption from
	// awaiting_approval or quota_wait) publishes its result only while
	// the mission's last marker is this one.
	ClaimSeq uint64 `msgpack:"claim_seq,omitempty"`
	// QuotaWaits counts the times the mission waited for its submitter's
	// running quota (StateQuotaWait).
	QuotaWaits int `msgpack:"quota_waits,omitempty"`
	// Reason is the Fail reason of a failed, cancelled or dead mission.
	Reason string `msgpack:"reason,omitempty"`
	// Replayed is set with the final state: what the last run took from
	// the mission's journal instead of repeating it.
	Replayed  *Replayed `msgpack:"replayed,omitempty"`
	UpdatedAt time.Time `msgpack:"updated_at"`
	// Summary says what the mission is, for lists (the mission itself
	// leaves the queue once taken); written with the first status.
	Summary *MissionSummary `msgpack:"summary,omitempty"`
}

// MissionSummary is what a list shows of a mission besides its state.
type MissionSummary struct {
	// Kind is KindAgent or KindCompiled.
	Kind string `msgpack:"kind,omitempty"`
	// Agent is the top-level agent's name.
	Agent string `msgpack:"agent,omitempty"`
	// Prompt is the first non-empty line of the agent's prompt, at most
	// MaxSummaryPrompt characters.
	Prompt string `msgpack:"prompt,omitempty"`
	// Labels are the mission's labels.
	Labels map[string]string `msgpack:"labels,omitempty"`
	// Scripted says the mission runs on its script, not a model.
	Scripted bool `msgpack:"scripted,omitempty"`
}

// MaxSummaryPrompt bounds MissionSummary.Prompt, in characters.
const MaxSummaryPrompt = 120

// Summarize returns m's summary.
func Summarize(m *Mission) *MissionSummary {
	s := &MissionSummary{Kind: m.Kind, Labels: m.Labels, Scripted: m.Scripted()}
	if m.Agent != nil {
		s.Agent = m.Agent.Name
		for _, line := range strings.Split(m.Agent.Prompt, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				if r := []rune(line); len(r) > MaxSummaryPrompt {
					line = string(r[:MaxSummaryPrompt-1]) + "…"
				}
				s.Prompt = line
				break
			}
		}
	}
	return s
}

// Validate checks a status value.
func (s *Status) Validate() error {
	if s == nil {
		return invalidf("status is nil")
	}
	if s.Version < 0 || s.Version > StatusVersion {
		return invalidf("status.v: version %d not supported (max %d)", s.Version, StatusVersion)
	}
	if !ValidMissionID(s.MissionID) {
		return invalidf("status.mission_id: %q is not a ULID", s.MissionID)
	}
	switch s.State {
	case StateQueued, StateRunning, StateAwaitingApproval, StateQuotaWait, StateSucceeded, StateFailed, StateCancelled, StateDead:
	default:
		return invalidf("status.state: %q is not a known state", s.State)
	}
	if s.Attempt < 0 {
		return invalidf("status.attempt: negative")
	}
	return nil
}

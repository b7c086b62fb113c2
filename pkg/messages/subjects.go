package messages

import (
	"fmt"
	"strings"
)

// Stream, bucket and subject names of the fleet's JetStream layout
// (docs/fleet.md). Everything that names a NATS subject or store goes through
// the constants and functions of this file.
const (
	// StreamMissions is the WorkQueue stream of submitted missions.
	StreamMissions = "MISSIONS"
	// StreamResults holds one final Step per mission (MaxMsgsPerSubject 1).
	StreamResults = "RESULTS"
	// StreamEvents holds short-lived progress events.
	StreamEvents = "EVENTS"
	// StreamDead holds missions that exhausted MaxDeliver or could not be
	// decoded.
	StreamDead = "DEAD"
	// StreamJournal holds the turn journal of running missions: the model
	// replies and tool results a redelivered mission replays.
	StreamJournal = "JOURNAL"
	// StreamParked holds missions suspended for approval and the
	// schedules that queue them again (docs/approvals.md).
	StreamParked = "PARKED"
	// BucketStatus is the KV bucket of mission status, keyed by mission id.
	BucketStatus = "mission_status"
	// BucketContext is the object store of large mission contexts.
	BucketContext = "mission_ctx"
	// BucketResults is the object store of Steps too large for one
	// message (Step.Stored), written by workers, read by callers.
	BucketResults = "mission_results"
	// BucketApprovals is the KV bucket of tool calls that needed approval
	// (messages.Approval), keyed by ApprovalKey.
	BucketApprovals = "mission_approvals"
	// BucketBudgetLimits is the KV bucket of the fleet-wide budgets,
	// keyed by <scope>.<window>; BucketBudgetSpend holds what each spent
	// in a period, keyed by <scope>.<window>.<period> (docs/fleet.md,
	// "Budgets").
	BucketBudgetLimits = "budget_limits"
	BucketBudgetSpend  = "budget_spend"

	// SubjectSubmitPrefix prefixes mission.submit.<priority>.
	SubjectSubmitPrefix = "mission.submit."
	// SubjectParkPrefix prefixes mission.park.<id> in PARKED: the
	// scheduled message that queues a suspended mission again at its
	// approval deadline.
	SubjectParkPrefix = "mission.park."
	// SubjectParkedPrefix prefixes mission.parked.<id> in PARKED: the
	// suspended mission's message, which a wake queues again.
	SubjectParkedPrefix = "mission.parked."
	// SubjectWakePrefix prefixes mission.wake.<priority>.<id> in PARKED:
	// a suspended mission's message queued again (by its schedule or a
	// decision); MISSIONS sources it as mission.submit.<priority>.
	SubjectWakePrefix = "mission.wake."
	// SubjectResultPrefix prefixes mission.result.<id>.
	SubjectResultPrefix = "mission.result."
	// SubjectEventPrefix prefixes mission.event.<id>.<kind>.
	SubjectEventPrefix = "mission.event."
	// SubjectDeadPrefix prefixes mission.dead.<id>.
	SubjectDeadPrefix = "mission.dead."
	// SubjectJournalPrefix prefixes mission.journal.<id>.
	SubjectJournalPrefix = "mission.journal."
	// SubjectCancelPrefix prefixes mission.cancel.<id> (core NATS).
	SubjectCancelPrefix = "mission.cancel."
	// SubjectToolPrefix prefixes tool.<service>.<tool> (core NATS, micro).
	SubjectToolPrefix = "tool."
)

// Header names. The mission id and W3C trace context travel in headers so
// that they can be read without decoding the body.
const (
	// HeaderMissionID carries the mission id on every fleet message.
	HeaderMissionID = "Ptc-Mission-Id"
	// HeaderCallID carries a tool call id on tool requests.
	HeaderCallID = "Ptc-Call-Id"
	// HeaderTimeout carries a tool request's timeout in milliseconds so the
	// service can stop work the caller no longer waits for.
	HeaderTimeout = "Ptc-Timeout-Ms"
	// HeaderIdempotencyKey carries a tool call's idempotency key,
	// "<mission id>/<turn>/<call index>": the same on every attempt and
	// every worker that makes the call.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderAttempt carries the delivery attempt of the mission making a
	// tool call (1 on the first worker).
	HeaderAttempt = "Ptc-Attempt"
	// HeaderRetry carries how many times this worker resent a tool request
	// after a lost connection or no responders; absent on the first send.
	HeaderRetry = "Ptc-Retry"
	// HeaderHeartbeatMs on a tool request asks the tool service for a
	// progress message every that many milliseconds while it works on the
	// call (services whose endpoints carry the ptc.heartbeat metadata send
	// them).
	HeaderHeartbeatMs = "Ptc-Heartbeat-Ms"
	// HeaderHeartbeat marks a progress message: an empty message on a tool
	// request's reply subject saying the call is still being worked on.
	HeaderHeartbeat = "Ptc-Heartbeat"
	// HeaderJournalKey names a journal entry (which reply or result it is).
	HeaderJournalKey = "Ptc-Journal-Key"
	// HeaderJournalBatch marks a journal message carrying several entries
	// (their count); its body lists them, each with its key.
	HeaderJournalBatch = "Ptc-Journal-Batch"
	// HeaderReason carries a human readable reason (dead letters, cancels).
	HeaderReason = "Ptc-Reason"
	// HeaderTraceParent is the W3C trace context header.
	HeaderTraceParent = "traceparent"
	// HeaderTraceState is the W3C trace state header.
	HeaderTraceState = "tracestate"
)

// Mission priorities; each is a subject token and a durable consumer.
const (
	PriorityHigh   = "high"
	PriorityNormal = "normal"
	PriorityLow    = "low"
)

// Priorities lists the priorities from highest to lowest. Callers must not
// modify it.
func Priorities() []string { return []string{PriorityHigh, PriorityNormal, PriorityLow} }

// ValidPriority reports whether p is a known priority ("" is not).
func ValidPriority(p string) bool {
	return p == PriorityHigh || p == PriorityNormal || p == PriorityLow
}

// SubmitSubject is the subject a mission of priority p is published on; an
// empty p means PriorityNormal.
func SubmitSubject(p string) string {
	if p == "" {
		p = PriorityNormal
	}
	return SubjectSubmitPrefix + p
}

// ResultSubject is the subject of mission id's final Step.
func ResultSubject(id string) string { return SubjectResultPrefix + id }

// EventSubject is the subject of a progress event of the given kind.
func EventSubject(id, kind string) string { return SubjectEventPrefix + id + "." + kind }

// EventFilter matches every progress event of mission id.
func EventFilter(id string) string { return SubjectEventPrefix + id + ".>" }

// JournalSubject is the subject of mission id's turn journal.
func JournalSubject(id string) string { return SubjectJournalPrefix + id }

// ParkSubject is the subject of a suspended mission's schedule.
func ParkSubject(id string) string { return SubjectParkPrefix + id }

// ParkedSubject is the subject of a suspended mission's message.
func ParkedSubject(id string) string { return SubjectParkedPrefix + id }

// WakeSubject is the subject on which mission id, of priority p, is
// queued again after a suspension.
func WakeSubject(p, id string) string {
	if p == "" {
		p = PriorityNormal
	}
	return SubjectWakePrefix + p + "." + id
}

// DeadSubject is the dead-letter subject of mission id.
func DeadSubject(id string) string { return SubjectDeadPrefix + id }

// CancelSubject is the core NATS subject a cancel of mission id is sent on.
func CancelSubject(id string) string { return SubjectCancelPrefix + id }

// CancelWildcard matches every cancel subject; workers subscribe to it.
const CancelWildcard = SubjectCancelPrefix + "*"

// ToolSubject is the micro endpoint subject of a tool.
func ToolSubject(service, tool string) string { return SubjectToolPrefix + service + "." + tool }

// ValidToken reports whether s can be used as one NATS subject token: not
// empty, and without '.', '*', '>' or whitespace.
func ValidToken(s string) bool {
	if s == "" {
		return false
	}
	return !strings.ContainsAny(s, ".*> \t\r\n\f\v")
}

// ValidName reports whether s is a valid tool, service or agent name: ASCII
// letters, digits, '-' and '_' (what a micro endpoint name accepts), 1 to 128
// characters.
func ValidName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

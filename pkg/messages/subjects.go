package messages

import (
	"fmt"
	"math"
	"strconv"
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
	// BucketQuotaLimits is the KV bucket of the per-submitter quotas,
	// keyed by "default" or submitter.<name>; BucketQuotaLeases holds the
	// leases of the missions running under a running quota, one key per
	// submitter (docs/fleet.md, "Quotas").
	BucketQuotaLimits = "quota_limits"
	BucketQuotaLeases = "quota_leases"

	// SubjectSubmitPrefix prefixes mission.submit.<submitter>.<priority>.<id>.
	SubjectSubmitPrefix = "mission.submit."
	// SubjectParkPrefix prefixes mission.park.<id> in PARKED: the
	// suspended mission's message, which a decision's wake queues again,
	// stored as the message schedule that queues it again at its
	// approval deadline.
	SubjectParkPrefix = "mission.park."
	// SubjectParkedPrefix prefixes mission.parked.<id> in PARKED: where
	// an earlier release stored the suspended mission's message, next to
	// an empty schedule on mission.park.<id> that copies it; deciders
	// still read it there.
	SubjectParkedPrefix = "mission.parked."
	// SubjectWakePrefix prefixes mission.wake.<submitter>.<priority>.<id>
	// in PARKED: a suspended mission's message queued again (by its
	// schedule; by a decision or a quota's lease given back where MISSIONS
	// holds no SubjectWokenPrefix subject or refuses it); workers move it
	// into MISSIONS on its SubjectWokenPrefix subject (HeaderWakeMoved).
	SubjectWakePrefix = "mission.wake."
	// SweepSubject is, in PARKED, the fleet's repeating schedule that
	// publishes SweepTickSubject: each tick asks one worker to look for
	// missions whose decision's wake was lost and queue them again
	// (docs/approvals.md, "Guarantees"). It is no mission's park subject
	// (a mission id is a ULID).
	SweepSubject = SubjectParkPrefix + "sweep"
	// SweepTickSubject is the subject of the sweep's ticks: one of
	// PARKED's wake subjects, so the workers' wake consumer hands each
	// tick to one worker, and a wake of no mission (its priority is
	// none: ParseWakeSubject refuses it).
	SweepTickSubject = SubjectWakePrefix + "fleet.sweep.stalled"
	// SubjectWokenPrefix prefixes mission.woken.<submitter>.<priority>.<id>
	// in MISSIONS: a decision's wake, or a wake a worker moved from
	// PARKED, stored in MISSIONS directly as
	// mission.submit.<submitter>.<priority>.<id>.<lane> (the lane its
	// submit would take). Only the approver and worker roles may publish
	// there.
	SubjectWokenPrefix = "mission.woken."
	// SubjectQueuedPrefix prefixes
	// mission.queued.<submitter>.<priority>.<id>.<lane>: MISSIONS
	// republishes the headers of each mission it stores there (core NATS;
	// only the server publishes there), so workers hear a mission once it
	// can be fetched.
	SubjectQueuedPrefix = "mission.queued."
	// SubjectResultPrefix prefixes mission.result.<submitter>.<id>.
	SubjectResultPrefix = "mission.result."
	// SubjectStoredPrefix prefixes mission.stored.<submitter>.<id>: the
	// result StreamResults stored, republished by the server (core NATS;
	// only the server publishes there).
	SubjectStoredPrefix = "mission.stored."
	// SubjectEventPrefix prefixes mission.event.<submitter>.<id>.<n>.<kind>.
	SubjectEventPrefix = "mission.event."
	// SubjectDeadPrefix prefixes mission.dead.<id>.
	SubjectDeadPrefix = "mission.dead."
	// SubjectJournalPrefix prefixes mission.journal.<id>.
	SubjectJournalPrefix = "mission.journal."
	// SubjectCancelPrefix prefixes mission.cancel.<submitter>.<id> (core
	// NATS requests, answered by the fleet).
	SubjectCancelPrefix = "mission.cancel."
	// SubjectStopPrefix prefixes mission.stop.<submitter>.<id> (core
	// NATS, between workers): stop the run of a mission whose cancel a
	// worker carried out.
	SubjectStopPrefix = "mission.stop."
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
	// "<mission id>/<turn>/<digest>/<occurrence>" (the call's content and
	// its occurrence in the turn, docs/wire.md): the same on every attempt
	// and every worker that makes the call.
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
	// HeaderParkedEvent on a suspended mission's parked message is the
	// number of the mission's approval_requested event, its last event
	// when it parked: a decider numbers its approval_decided event after
	// it without reading the stream (HeaderParkedDecided says when).
	HeaderParkedEvent = "Ptc-Parked-Event"
	// HeaderParkedDecided on a parked message is how many of the mission's
	// approval records were decided when it parked, as its run saw them:
	// a decider that finds more decided besides its own call (another
	// decision came after the park) reads the mission's last event
	// instead of numbering after HeaderParkedEvent.
	HeaderParkedDecided = "Ptc-Parked-Decided"
	// HeaderParkedSuspension on a parked message is the suspension it
	// parks: the mission's Status.Suspensions once suspended.
	HeaderParkedSuspension = "Ptc-Parked-Suspension"
	// HeaderWokenEvent on a decision's wake is the number of the
	// decision's approval_decided event, set only when it is the
	// mission's last event until a worker takes the mission: the
	// decision numbered it after HeaderParkedEvent and decided the
	// suspension's last pending call, so no other decision follows.
	// The worker that takes the mission from awaiting_approval, on its
	// first delivery, at the suspension HeaderWokenSuspension names,
	// numbers its events after it without reading the stream.
	HeaderWokenEvent = "Ptc-Woken-Event"
	// HeaderWokenSuspension on a decision's wake is the suspension it
	// ends (HeaderParkedSuspension of the parked message it copies).
	HeaderWokenSuspension = "Ptc-Woken-Suspension"
	// HeaderWoken marks a decision's wake published on WokenSubject (by
	// its decider, or by the worker that finds it after parking), which
	// MISSIONS stores on the subject a submit of the mission takes: its
	// value is the decided call. The claim reads the mission's status at
	// once, as for a wake moved from PARKED (HeaderWakeMoved), rather than
	// trying to create it first.
	HeaderWoken = "Ptc-Woken"
	// HeaderWakeMoved marks a wake a worker moved from PARKED into
	// MISSIONS on its WokenSubject (a deadline's; a decision's or a
	// quota's that MISSIONS refused), or a mission waiting for its quota
	// that a worker giving a lease back queued there itself: its value is
	// the sequence in PARKED of the message it copies. The claim takes a mission waiting for approval
	// or for its quota from such a copy, as it did from one MISSIONS
	// sourced from PARKED (marked Nats-Stream-Source by the server).
	HeaderWakeMoved = "Ptc-Wake-Moved"
	// HeaderError carries the error of a fleet request that failed (a
	// cancel): a code (ErrCodeNotFound, ErrCodeFailed), ": " and a
	// message.
	HeaderError = "Ptc-Error"
	// HeaderReason carries a human readable reason (dead letters, cancels).
	HeaderReason = "Ptc-Reason"
	// HeaderTraceParent is the W3C trace context header.
	HeaderTraceParent = "traceparent"
	// HeaderTraceState is the W3C trace state header.
	HeaderTraceState = "tracestate"
)

// Codes of HeaderError.
const (
	// ErrCodeNotFound: the mission is not known to the fleet (or not
	// the requester's).
	ErrCodeNotFound = "not_found"
	// ErrCodeFailed: the request could not be carried out.
	ErrCodeFailed = "failed"
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

// A submitter is who submits a mission: the identity the fleet knows it by,
// the name of its NATS user (docs/security.md). It is a subject token of
// every subject of its missions' submission, result, events and cancels,
// and of their status keys, so NATS permissions can confine a submitter to
// its own missions. AllSubmitters in its place reads every submitter's (a
// reader granted that by its NATS user).
const (
	// DefaultSubmitter names the submitter of a connection without a
	// NATS user (a local fleet without authentication).
	DefaultSubmitter = "anonymous"
	// AllSubmitters stands for every submitter in the subjects and keys
	// a reader looks a mission up with; it is no submitter's name.
	AllSubmitters = "*"
	// MaxSubmitterLen bounds a submitter's name.
	MaxSubmitterLen = 64
)

// ValidSubmitter reports whether s can name a submitter: a subject token
// (ValidToken) that is also a valid status key (ASCII letters, digits,
// '-', '_' and '='), at most MaxSubmitterLen characters.
func ValidSubmitter(s string) bool {
	if s == "" || len(s) > MaxSubmitterLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '=':
		default:
			return false
		}
	}
	return true
}

// SubmitSubject is the subject mission id of submitter s with priority p is
// published on; an empty p means PriorityNormal.
func SubmitSubject(s, p, id string) string {
	if p == "" {
		p = PriorityNormal
	}
	return SubjectSubmitPrefix + s + "." + p + "." + id
}

// SubmitFilter matches the missions of priority p, of every submitter,
// stored as they were submitted, with no lane: the layout before lanes
// (its priority's consumer drains them).
func SubmitFilter(p string) string { return SubjectSubmitPrefix + "*." + p + ".*" }

// SubmitWildcard matches every mission as submitted, before MISSIONS
// gives it its lane.
const SubmitWildcard = SubjectSubmitPrefix + "*.*.*"

// MissionLanes is how many lanes each priority's queue is split into.
// MISSIONS stores a mission submitted on
// mission.submit.<submitter>.<priority>.<id> as
// mission.submit.<submitter>.<priority>.<id>.<lane>, the lane being
// SubmitLane(submitter), and each lane has a consumer of its own, so
// workers take missions from the lanes in turn and one submitter's
// backlog holds up only the submitters that share its lane
// (docs/fleet.md, "Fair share").
const MissionLanes = 8

// SubmitLane is the lane of submitter s's missions: the FNV-1a hash of s
// modulo MissionLanes, which is what the stream's transform
// {{partition(MissionLanes,1)}} computes.
func SubmitLane(s string) int {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return int(h % MissionLanes)
}

// QueueSource matches what MISSIONS stores from its own subjects, the
// submits (SubmitWildcard) and the decisions' wakes (WokenWildcard): the
// source of the transform that gives each its lane (QueueTransform).
const QueueSource = "mission.*.*.*.*"

// QueueTransform is the destination of the transform of MISSIONS
// (source QueueSource): a mission submitted on
// SubmitSubject(s, p, id) or woken on WokenSubject(s, p, id) is stored
// as mission.submit.<s>.<p>.<id>.<lane>, the lane SubmitLane(s) (the
// partition of the submitter's token alone).
func QueueTransform() string {
	return SubjectSubmitPrefix + "{{wildcard(2)}}.{{wildcard(3)}}.{{wildcard(4)}}.{{partition(" +
		strconv.Itoa(MissionLanes) + ",2)}}"
}

// LaneFilter matches the missions of priority p in lane l.
func LaneFilter(p string, l int) string {
	return SubjectSubmitPrefix + "*." + p + ".*." + strconv.Itoa(l)
}

// LanedWildcard matches every mission as MISSIONS stores it, in its lane.
const LanedWildcard = SubjectSubmitPrefix + "*.*.*.*"

// QueuedSubject is where MISSIONS republishes the headers of mission id of
// submitter s, of priority p, once it stored it in lane l.
func QueuedSubject(s, p, id string, l int) string {
	return SubjectQueuedPrefix + s + "." + p + "." + id + "." + strconv.Itoa(l)
}

// QueuedTransform is QueuedSubject of the tokens of a subject LanedWildcard
// matches, as a republish destination.
func QueuedTransform() string {
	return SubjectQueuedPrefix + "{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}.{{wildcard(4)}}"
}

// QueuedWildcard matches every subject made by QueuedSubject.
const QueuedWildcard = SubjectQueuedPrefix + "*.*.*.*"

// ParseQueuedSubject returns the submitter, priority, mission id and lane
// of a subject made by QueuedSubject; ok is false for any other subject.
func ParseQueuedSubject(subject string) (s, p, id string, l int, ok bool) {
	rest, found := strings.CutPrefix(subject, SubjectQueuedPrefix)
	if !found {
		return "", "", "", 0, false
	}
	s, p, id, ok = ParseSubmitSubject(SubjectSubmitPrefix + rest)
	if !ok || strings.Count(rest, ".") != 3 {
		return "", "", "", 0, false
	}
	l, _ = strconv.Atoi(rest[strings.LastIndexByte(rest, '.')+1:])
	return s, p, id, l, true
}

// QueuedFilters match mission id of submitter s while it is queued: in
// its lane, and stored with no lane by a layout set up before lanes.
func QueuedFilters(s, id string) [2]string {
	return [2]string{SubjectSubmitPrefix + s + ".*." + id + ".*", SubjectSubmitPrefix + s + ".*." + id}
}

// ParseSubmitSubject returns the submitter, priority and mission id of a
// subject made by SubmitSubject, or of the same subject with its lane as
// MISSIONS stores it; ok is false for any other subject.
func ParseSubmitSubject(subject string) (s, p, id string, ok bool) {
	rest, found := strings.CutPrefix(subject, SubjectSubmitPrefix)
	if !found {
		return "", "", "", false
	}
	// the tokens read in place (a worker reads each mission's subject)
	var t [5]string
	n := 0
	for n < len(t) {
		tok, more, cut := strings.Cut(rest, ".")
		t[n], rest, n = tok, more, n+1
		if !cut {
			break
		}
	}
	if n == len(t) { // more than four tokens
		return "", "", "", false
	}
	if n == 4 {
		if l, err := strconv.Atoi(t[3]); err != nil || l < 0 || l >= MissionLanes || t[3] != strconv.Itoa(l) {
			return "", "", "", false
		}
		n = 3
	}
	if n != 3 || !ValidSubmitter(t[0]) || !ValidPriority(t[1]) || !ValidMissionID(t[2]) {
		return "", "", "", false
	}
	return t[0], t[1], t[2], true
}

// ResultSubject is the subject of mission id's final Step.
func ResultSubject(s, id string) string { return SubjectResultPrefix + s + "." + id }

// StoredResultSubject is where StreamResults republishes mission id's
// result once it has stored it: a message there is the stored result.
func StoredResultSubject(s, id string) string { return SubjectStoredPrefix + s + "." + id }

// StoredResultTransform is StoredResultSubject of the submitter and id of
// a result subject, as a republish destination.
func StoredResultTransform() string { return StoredResultSubject("{{wildcard(1)}}", "{{wildcard(2)}}") }

// RecordSubject is the subject of mission id's MissionRecord in
// StreamResults, next to its result: readable by what reads its
// submitter's results.
func RecordSubject(s, id string) string { return SubjectResultPrefix + s + "." + id + ".record" }

// ClaimSubject is the subject of one claim marker of mission id in
// StreamResults: a worker that takes the mission from an earlier run
// (a redelivery, or a status another run holds) publishes one, with a
// token of its own (each marker is a subject's only message), before it
// reads whether the mission's result is stored. A run's result is stored
// only while the last marker of its mission is the one the run knows
// (Status.ClaimSeq), so a run taken over publishes nothing once the new
// run has looked.
func ClaimSubject(s, id, token string) string {
	return SubjectResultPrefix + s + "." + id + ".claim." + token
}

// ClaimFilter matches every claim marker of mission id (ClaimSubject).
func ClaimFilter(s, id string) string { return ClaimSubject(s, id, "*") }

// EventSubject is the subject of the n-th progress event (from 1) of
// mission id, of the given kind.
func EventSubject(s, id string, n uint64, kind string) string {
	return SubjectEventPrefix + s + "." + id + "." + strconv.FormatUint(n, 10) + "." + kind
}

// EventFilter matches every progress event of mission id.
func EventFilter(s, id string) string { return SubjectEventPrefix + s + "." + id + ".>" }

// EventNumberFilter matches the n-th progress event of mission id.
func EventNumberFilter(s, id string, n uint64) string {
	return SubjectEventPrefix + s + "." + id + "." + strconv.FormatUint(n, 10) + ".*"
}

// MaxEventBatch bounds how many progress events one message on EVENTS
// carries (EventBatchSubject).
const MaxEventBatch = 256

// EventBatchSubject is the subject of one message carrying count (2 to
// MaxEventBatch) progress events of mission id, numbered first to
// first+count-1: the count takes the place of the kind. It is stored
// where event number first would be (EventNumberFilter(s, id, first)
// finds it).
func EventBatchSubject(s, id string, first uint64, count int) string {
	return SubjectEventPrefix + s + "." + id + "." + strconv.FormatUint(first, 10) + "." + strconv.Itoa(count)
}

// ParseEventSubject returns the submitter, mission id, the number of the
// first event and how many events the message carries, of a subject made
// by EventSubject (one event: the last token is its kind) or
// EventBatchSubject (the last token is the count); ok is false for any
// other subject.
func ParseEventSubject(subject string) (s, id string, n, count uint64, ok bool) {
	rest, found := strings.CutPrefix(subject, SubjectEventPrefix)
	if !found {
		return "", "", 0, 0, false
	}
	t := strings.Split(rest, ".")
	if len(t) != 4 || t[3] == "" {
		return "", "", 0, 0, false
	}
	n, err := strconv.ParseUint(t[2], 10, 64)
	if err != nil || n == 0 {
		return "", "", 0, 0, false
	}
	count = 1
	if c := t[3][0]; c >= '0' && c <= '9' {
		// a kind never starts with a digit: a batch's count
		count, err = strconv.ParseUint(t[3], 10, 64)
		if err != nil || count < 2 || count > MaxEventBatch || t[3] != strconv.FormatUint(count, 10) || n > math.MaxUint64-count+1 {
			return "", "", 0, 0, false
		}
	}
	return t[0], t[1], n, count, true
}

// StatusKey is mission id's key in BucketStatus.
func StatusKey(s, id string) string { return s + "." + id }

// StatusSubject is the subject of a status key in BucketStatus's stream,
// made in one allocation: a mission's status is read and written under it
// several times.
func StatusSubject(s, id string) string { return "$KV." + BucketStatus + "." + s + "." + id }

// ParseStatusKey returns the submitter and mission id of a StatusKey.
func ParseStatusKey(key string) (s, id string, ok bool) {
	s, id, ok = strings.Cut(key, ".")
	if !ok || !ValidSubmitter(s) || !ValidMissionID(id) {
		return "", "", false
	}
	return s, id, true
}

// ContextName is the name of mission id's context in BucketContext when it
// is stored aside: under its submitter, which the worker checks.
func ContextName(s, id string) string { return s + "/" + id + "/context" }

// JournalSubject is the subject of mission id's turn journal.
func JournalSubject(id string) string { return SubjectJournalPrefix + id }

// ParkSubject is the subject of a suspended mission's message, its
// deadline's schedule.
func ParkSubject(id string) string { return SubjectParkPrefix + id }

// ParkedSubject is the subject an earlier release stored a suspended
// mission's message on (SubjectParkedPrefix).
func ParkedSubject(id string) string { return SubjectParkedPrefix + id }

// WakeSubject is the subject on which mission id of submitter s, of
// priority p, is queued again after a suspension.
func WakeSubject(s, p, id string) string {
	if p == "" {
		p = PriorityNormal
	}
	return SubjectWakePrefix + s + "." + p + "." + id
}

// WokenSubject is the subject on which a decision queues mission id of
// submitter s, of priority p, again, into MISSIONS directly.
func WokenSubject(s, p, id string) string {
	if p == "" {
		p = PriorityNormal
	}
	return SubjectWokenPrefix + s + "." + p + "." + id
}

// WokenWildcard matches every subject made by WokenSubject.
const WokenWildcard = SubjectWokenPrefix + "*.*.*"

// ParseWokenSubject returns the submitter, priority and mission id of a
// subject made by WokenSubject; ok is false for any other subject.
func ParseWokenSubject(subject string) (s, p, id string, ok bool) {
	rest, found := strings.CutPrefix(subject, SubjectWokenPrefix)
	if !found || strings.Count(rest, ".") != 2 {
		return "", "", "", false
	}
	return ParseSubmitSubject(SubjectSubmitPrefix + rest)
}

// WakeWildcard matches every subject made by WakeSubject.
const WakeWildcard = SubjectWakePrefix + "*.*.*"

// ParseWakeSubject returns the submitter, priority and mission id of a
// subject made by WakeSubject; ok is false for any other subject.
func ParseWakeSubject(subject string) (s, p, id string, ok bool) {
	rest, found := strings.CutPrefix(subject, SubjectWakePrefix)
	if !found {
		return "", "", "", false
	}
	t := strings.Split(rest, ".")
	if len(t) != 3 || !ValidSubmitter(t[0]) || !ValidPriority(t[1]) || !ValidMissionID(t[2]) {
		return "", "", "", false
	}
	return t[0], t[1], t[2], true
}

// DeadSubject is the dead-letter subject of mission id.
func DeadSubject(id string) string { return SubjectDeadPrefix + id }

// CancelSubject is the subject a cancel of mission id of submitter s is
// requested on (core NATS request; the fleet answers).
func CancelSubject(s, id string) string { return SubjectCancelPrefix + s + "." + id }

// CancelWildcard matches every cancel subject; workers subscribe to it.
const CancelWildcard = SubjectCancelPrefix + "*.*"

// StopSubject is the subject a worker that carried out the cancel of
// running mission id of submitter s tells the worker running it to stop on
// (core NATS; workers only).
func StopSubject(s, id string) string { return SubjectStopPrefix + s + "." + id }

// StopWildcard matches every stop subject; workers subscribe to it.
const StopWildcard = SubjectStopPrefix + "*.*"

// ParseStopSubject returns the submitter and mission id of a subject made
// by StopSubject.
func ParseStopSubject(subject string) (s, id string, ok bool) {
	return parseSubmitterID(subject, SubjectStopPrefix)
}

// ParseCancelSubject returns the submitter and mission id of a subject
// made by CancelSubject.
func ParseCancelSubject(subject string) (s, id string, ok bool) {
	return parseSubmitterID(subject, SubjectCancelPrefix)
}

// parseSubmitterID returns the submitter and mission id of a subject
// prefix + "<submitter>.<id>".
func parseSubmitterID(subject, prefix string) (s, id string, ok bool) {
	rest, found := strings.CutPrefix(subject, prefix)
	if !found {
		return "", "", false
	}
	s, id, ok = strings.Cut(rest, ".")
	if !ok || !ValidSubmitter(s) || !ValidMissionID(id) {
		return "", "", false
	}
	return s, id, true
}

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

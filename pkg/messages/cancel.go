package messages

import "time"

// CancelVersion is the version of the Cancel layout.
const CancelVersion = 1

// Cancel asks the fleet to cancel a mission. It is a core NATS request on
// CancelSubject(submitter, id), so only the mission's submitter (or a user
// granted every submitter's cancels) may send it. One worker (queue group
// CancelQueue) carries it out and answers: a queued mission is marked
// cancelled and its cancelled Step stored; a running one gets the cancel
// flag in its status, which its worker checks on every heartbeat, and the
// same Cancel on StopSubject(submitter, id), on which the worker running it
// stops it at once.
type Cancel struct {
	Version   int    `msgpack:"v"`
	MissionID string `msgpack:"mission_id"`
	// Reason is a human readable reason, recorded in the cancelled Step.
	Reason      string    `msgpack:"reason,omitempty"`
	RequestedAt time.Time `msgpack:"requested_at"`
}

// CancelQueue is the queue group of the workers that carry cancels out.
const CancelQueue = "ptc-cancel"

// Validate checks a cancel request.
func (c *Cancel) Validate() error {
	if c == nil {
		return invalidf("cancel is nil")
	}
	if c.Version < 0 || c.Version > CancelVersion {
		return invalidf("cancel.v: version %d not supported (max %d)", c.Version, CancelVersion)
	}
	if !ValidMissionID(c.MissionID) {
		return invalidf("cancel.mission_id: %q is not a ULID", c.MissionID)
	}
	return nil
}

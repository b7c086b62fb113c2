package messages

import "time"

// CancelVersion is the version of the Cancel layout.
const CancelVersion = 1

// Cancel asks the worker running a mission to stop it. It is sent on
// CancelSubject(id) (core NATS) after the cancel flag is set in the mission's
// status, so a worker that misses the message still sees the flag.
type Cancel struct {
	Version   int    `msgpack:"v"`
	MissionID string `msgpack:"mission_id"`
	// Reason is a human readable reason, recorded in the cancelled Step.
	Reason      string    `msgpack:"reason,omitempty"`
	RequestedAt time.Time `msgpack:"requested_at"`
}

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

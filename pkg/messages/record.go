package messages

// MissionRecordVersion is the version of the MissionRecord layout.
const MissionRecordVersion = 1

// MissionRecord is what a worker keeps of a finished mission besides its
// Step, so that the mission can be replayed in any process (dispatcher
// replay): the mission as it ran (its context loaded inline) and the
// schema of each tool it could call as the worker discovered it (the
// signatures its calls were validated and coerced against). The Step's
// trace holds the rest: every model reply and tool result. It is stored,
// encoded with Marshal, on RecordSubject in StreamResults, or, when a
// later attempt or a large record keeps it, sealed in BucketResults
// under MissionRecordName(id); the result's Step.Record says where.
type MissionRecord struct {
	// Version is the layout version (MissionRecordVersion when written).
	Version int `msgpack:"v"`
	// Mission is the mission as the worker ran it, its context inline.
	Mission *Mission `msgpack:"mission"`
	// Tools are the mission's remote tools as discovered (name, signature,
	// description); a tool no service offered has no signature.
	Tools []ToolSchema `msgpack:"tools,omitempty"`
}

// MissionRecordName is the name of mission id's record in BucketResults.
func MissionRecordName(id string) string { return id + ".mission" }

// Validate checks a decoded record: a version this package reads and a
// valid mission.
func (r *MissionRecord) Validate() error {
	if r == nil {
		return invalidf("mission record is nil")
	}
	if r.Version < 0 || r.Version > MissionRecordVersion {
		return invalidf("record.v: version %d not supported (max %d)", r.Version, MissionRecordVersion)
	}
	if r.Mission == nil {
		return invalidf("record.mission is missing")
	}
	for i, t := range r.Tools {
		if t.Name == "" {
			return invalidf("record.tools[%d].name is empty", i)
		}
	}
	return r.Mission.Validate()
}

package messages

// ToolCallVersion is the version of the ToolRequest and ToolResponse layouts.
const ToolCallVersion = 1

// Tool error codes, sent in the Nats-Service-Error-Code header of a micro
// response and in ToolResponse.Error.Code. A worker produces the last four
// itself, without a response from any service.
const (
	// ToolErrBadRequest: the request could not be decoded or its arguments
	// did not fit the tool.
	ToolErrBadRequest = "bad_request"
	// ToolErrFailed: the tool ran and returned an error.
	ToolErrFailed = "tool_error"
	// ToolErrPanic: the tool panicked; the service recovered.
	ToolErrPanic = "panic"
	// ToolErrUnknown: the service has no such tool.
	ToolErrUnknown = "unknown_tool"
	// ToolErrUnavailable: no service answers for the tool (no responders,
	// or never discovered).
	ToolErrUnavailable = "unavailable"
	// ToolErrTimeout: the tool did not answer in time.
	ToolErrTimeout = "timeout"
	// ToolErrForbidden: the mission does not name the tool; no request was
	// sent.
	ToolErrForbidden = "forbidden"
	// ToolErrInternal: the call failed for another reason (connection
	// closed, undecodable response, ...).
	ToolErrInternal = "internal"
	// ToolErrDenied: the call needed approval and a person denied it, or
	// its approval deadline passed (docs/approvals.md); no request was
	// sent.
	ToolErrDenied = "denied"
)

// ToolRequest is the body of a tool call sent to tool.<service>.<tool>.
type ToolRequest struct {
	Version int `msgpack:"v"`
	// CallID identifies the call within its mission.
	CallID string `msgpack:"call_id"`
	// MissionID is the calling mission ("" for calls outside a mission).
	MissionID string `msgpack:"mission_id,omitempty"`
	// Tool is the tool name.
	Tool string `msgpack:"tool"`
	// Args are the call's arguments, plain Go data.
	Args map[string]any `msgpack:"args,omitempty"`
}

// Validate checks a tool request.
func (r *ToolRequest) Validate() error {
	if r == nil {
		return invalidf("tool_request is nil")
	}
	if r.Version < 0 || r.Version > ToolCallVersion {
		return invalidf("tool_request.v: version %d not supported (max %d)", r.Version, ToolCallVersion)
	}
	if r.CallID == "" {
		return invalidf("tool_request.call_id: empty")
	}
	if r.MissionID != "" && !ValidMissionID(r.MissionID) {
		return invalidf("tool_request.mission_id: %q is not a ULID", r.MissionID)
	}
	if !ValidName(r.Tool) {
		return invalidf("tool_request.tool: %q is not a valid tool name", r.Tool)
	}
	return nil
}

// ToolResponse is the body of a tool's answer. Exactly one of Result and
// Error is meaningful: the call succeeded when Error is nil.
type ToolResponse struct {
	Version int    `msgpack:"v"`
	CallID  string `msgpack:"call_id"`
	// Result is the tool's result, plain Go data.
	Result any `msgpack:"result"`
	// ResultRef, set instead of Result, names the object holding a large
	// result (see LargeResultBytes): the result's encoding, one value.
	ResultRef *ObjectRef `msgpack:"result_ref,omitempty"`
	// Error describes a failure; also sent as micro service-error headers.
	Error *ToolError `msgpack:"error,omitempty"`
}

// ToolError is a tool failure: a ToolErr* code and a message the model can
// read.
type ToolError struct {
	Code    string `msgpack:"code"`
	Message string `msgpack:"message"`
}

// Error returns "code: message".
func (e *ToolError) Error() string {
	if e == nil {
		return "<nil tool error>"
	}
	return e.Code + ": " + e.Message
}

// Validate checks a tool response.
func (r *ToolResponse) Validate() error {
	if r == nil {
		return invalidf("tool_response is nil")
	}
	if r.Version < 0 || r.Version > ToolCallVersion {
		return invalidf("tool_response.v: version %d not supported (max %d)", r.Version, ToolCallVersion)
	}
	if r.Error != nil {
		if r.Error.Code == "" {
			return invalidf("tool_response.error.code: empty")
		}
		if r.Result != nil || r.ResultRef != nil {
			return invalidf("tool_response.result: set together with an error")
		}
	}
	if r.ResultRef != nil {
		if r.Result != nil {
			return invalidf("tool_response.result_ref: set together with a result")
		}
		if err := r.ResultRef.validate("tool_response.result_ref"); err != nil {
			return err
		}
	}
	return nil
}

package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The JetStream API's answers to a delete of a message that is not there:
// a sequence past the stream's last or removed already is the store's
// error in a generic delete failure (its description says which), or a
// sequence not found.
const (
	errCodeDeleteFailed     = 10057 // JSStreamMsgDeleteFailedF
	errCodeSequenceNotFound = 10043 // JSSequenceNotFoundErrF
)

// msgDeleteAPI is the JetStream API subject of a message delete, less the
// stream's name.
const msgDeleteAPI = "$JS.API.STREAM.MSG.DELETE."

// deleteWait bounds the wait for the answer to a message delete: a
// request the server refuses as a permissions violation gets none.
const deleteWait = 2 * time.Second

// deleteMsgOn removes the message at sequence seq from stream
// ($JS.API.STREAM.MSG.DELETE, without erasing its bytes), with its
// request on replies when it is nc's reply mux, waiting at most
// deleteWait. A message already gone
// (removed, expired, or fired as a schedule) or never stored is
// jetstream.ErrMsgNotFound.
// The stream finds the message by its sequence, whatever else it holds:
// a rollup of the message's subject would scan every message stored
// between the subject's first and last.
func deleteMsgOn(ctx context.Context, nc *nats.Conn, replies *replyMux, stream string, seq uint64) error {
	subject := msgDeleteAPI + stream
	req := []byte(`{"seq":` + strconv.FormatUint(seq, 10) + `,"no_erase":true}`)
	r, err := apiRequest(ctx, nc, replies, subject, req, deleteWait)
	if err != nil {
		return fmt.Errorf("fleet: delete message %d of %s: %w", seq, stream, err)
	}
	var resp struct {
		Error   *jetstream.APIError `json:"error"`
		Success bool                `json:"success"`
	}
	if err := json.Unmarshal(r.Data, &resp); err != nil {
		return fmt.Errorf("fleet: delete message %d of %s: %w", seq, stream, err)
	}
	switch {
	case resp.Error != nil && (resp.Error.ErrorCode == errCodeNoMessage || resp.Error.ErrorCode == errCodeSequenceNotFound ||
		resp.Error.ErrorCode == errCodeDeleteFailed && (resp.Error.Description == "no message found" || resp.Error.Description == "stream store EOF")):
		return jetstream.ErrMsgNotFound
	case resp.Error != nil:
		return fmt.Errorf("fleet: delete message %d of %s: %w", seq, stream, resp.Error)
	case !resp.Success:
		return fmt.Errorf("fleet: delete message %d of %s: not removed", seq, stream)
	}
	return nil
}

package fleet

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// A setup failure is retried when it may go away by itself: a stream with
// no peers to place on because one is offline (a node of the cluster
// restarting or not started yet) is; one whose peers lack storage, a bad
// configuration and a reservation larger than the storage are not.
func TestTransientSetupError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&jetstream.APIError{Code: 400, ErrorCode: errCodeNoPeers, Description: "no suitable peers for placement, peer offline"}, true},
		{fmt.Errorf("fleet: stream PARKED: %w", &jetstream.APIError{Code: 400, ErrorCode: errCodeNoPeers, Description: "no suitable peers for placement, peer offline"}), true},
		{&jetstream.APIError{Code: 400, ErrorCode: errCodeNoPeers, Description: "no suitable peers for placement, insufficient storage"}, false},
		{&jetstream.APIError{Code: 400, ErrorCode: errCodeInsufficientStorage, Description: "insufficient storage resources available"}, false},
		{&jetstream.APIError{Code: 400, ErrorCode: 10052, Description: "stream configuration for replicas update is not allowed"}, false},
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamNameInUse, Description: "stream name already in use"}, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{errLayoutMissing, true},
		{jetstream.ErrInvalidStreamName, false},
	} {
		if got := transientSetupError(c.err); got != c.want {
			t.Errorf("transientSetupError(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

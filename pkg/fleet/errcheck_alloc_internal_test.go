package fleet

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// The checks of a write's error that every compare-and-set makes on its
// success allocate nothing for no error (errors.As keeps its target on
// the heap), and still tell the errors they name.
func TestErrorChecksOfNoErrorAllocateNothing(t *testing.T) {
	checks := map[string]func(error) bool{
		"isWrongLastSeq": isWrongLastSeq, "inFlightConflict": inFlightConflict,
		"isDuplicateInBatch": isDuplicateInBatch, "isWrongSequence": isWrongSequence,
	}
	codes := map[string]jetstream.ErrorCode{
		"isWrongLastSeq": jetstream.JSErrCodeStreamWrongLastSequence, "inFlightConflict": jetstream.JSErrCodeStreamWrongLastSequenceConstant,
		"isDuplicateInBatch": errCodeBatchDuplicate, "isWrongSequence": jetstream.JSErrCodeStreamWrongLastSequence,
	}
	for name, check := range checks {
		if n := testing.AllocsPerRun(100, func() { _ = check(nil) }); n != 0 && !raceOn {
			t.Errorf("%s(nil): %.0f allocations, want 0", name, n)
		}
		if check(nil) {
			t.Errorf("%s(nil) = true", name)
		}
		err := fmt.Errorf("publish: %w", &jetstream.APIError{ErrorCode: codes[name]})
		if !check(err) {
			t.Errorf("%s(%v) = false, want true", name, err)
		}
		if check(fmt.Errorf("publish: %w", &jetstream.APIError{ErrorCode: 1})) {
			t.Errorf("%s of another API error = true", name)
		}
	}
}

package fleet

import (
	"testing"
	"unsafe"
)

// TestMissionRunIsSmall bounds what the worker keeps of a mission for its
// whole run: a missionRun lives on the heap while its mission waits on a
// model, thousands at once. Its RunEnv (240 bytes) is the runner's, which
// takes its own copy, so missionRun does not hold one too.
func TestMissionRunIsSmall(t *testing.T) {
	if size := unsafe.Sizeof(missionRun{}); size > 400 {
		t.Errorf("a missionRun takes %d bytes; want at most 400", size)
	}
}

package fleet

import (
	"testing"
	"unsafe"
)

// TestMissionRunIsSmall bounds what the worker keeps of a mission for its
// whole run: a missionRun lives on the heap while its mission waits on a
// model, thousands at once. Its RunEnv (240 bytes) is the runner's, which
// takes its own copy, so missionRun does not hold one too; it points to
// the logger its run's contexts carry rather than holding a copy (112
// bytes), keeps when its run started as a duration after its delivery,
// and its flags together: 248 bytes, a block of 256, against 384.
func TestMissionRunIsSmall(t *testing.T) {
	if size := unsafe.Sizeof(missionRun{}); size > 256 {
		t.Errorf("a missionRun takes %d bytes; want at most 256", size)
	}
}

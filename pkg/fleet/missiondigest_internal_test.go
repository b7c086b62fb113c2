package fleet

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

// A body is the suspended mission's when its SHA-256 is the status's
// digest: one byte changed, or appended, is another mission; a status
// without a digest (an earlier release's) takes any body.
func TestSuspendedMissionComparesTheBodysDigest(t *testing.T) {
	body := bytes.Repeat([]byte("mission "), 100)
	sum := sha256.Sum256(body)
	digest := missionDigest(body)
	if digest != hex.EncodeToString(sum[:]) {
		t.Fatalf("missionDigest = %q, want the SHA-256 in lower-case hex", digest)
	}
	if !suspendedMission(body, digest) {
		t.Fatal("the suspended body was refused")
	}
	changed := bytes.Clone(body)
	changed[len(changed)/2] ^= 1
	for name, other := range map[string][]byte{"a byte changed": changed, "a byte added": append(bytes.Clone(body), ' '),
		"empty": nil} {
		if suspendedMission(other, digest) {
			t.Errorf("%s: taken as the suspended body", name)
		}
	}
	for _, d := range []string{digest[:len(digest)-1], digest + "0", "not a digest"} {
		if suspendedMission(body, d) {
			t.Errorf("digest %q: the body taken", d)
		}
	}
	if !suspendedMission(changed, "") {
		t.Error("a status without a digest refused a body")
	}
}

// The claim's check allocates nothing.
func TestSuspendedMissionAllocatesNothing(t *testing.T) {
	if raceOn {
		t.Skip("allocation counts differ under the race detector")
	}
	body := bytes.Repeat([]byte("mission "), 512)
	digest := missionDigest(body)
	if n := testing.AllocsPerRun(100, func() { _ = suspendedMission(body, digest) }); n != 0 {
		t.Errorf("suspendedMission allocates %v times, want 0", n)
	}
}

// BenchmarkSuspendedMission is the claim's check of a body awaiting
// approval, for missions of 1 KB, 16 KB and the largest a message
// carries.
func BenchmarkSuspendedMission(b *testing.B) {
	for _, n := range []int{1 << 10, 16 << 10, 256 << 10} {
		body := bytes.Repeat([]byte{'m'}, n)
		digest := missionDigest(body)
		b.Run(fmt.Sprintf("%dKB", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if !suspendedMission(body, digest) {
					b.Fatal("refused")
				}
			}
		})
	}
}

package fleettest

import (
	"slices"
	"testing"
	"time"
)

// ReportResumeLatencies reports the resume latencies of b's approval
// benchmarks: lat, each mission's decision asked for → its call reaching
// the tool, as p50-ms and p90-ms; burst, each call's time after its
// batch's first decision was asked for (as though every decision had
// been given at that instant, whatever pace the decisions came at), as
// burst-p50-ms and burst-max-ms. Both are sorted in place.
func ReportResumeLatencies(b *testing.B, lat, burst []time.Duration) {
	slices.Sort(lat)
	slices.Sort(burst)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*9/10]), "p90-ms")
	b.ReportMetric(ms(burst[len(burst)/2]), "burst-p50-ms")
	b.ReportMetric(ms(burst[len(burst)-1]), "burst-max-ms")
}

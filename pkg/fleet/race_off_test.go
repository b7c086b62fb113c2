//go:build !race

package fleet_test

// scaleMissions is the size of the many-missions regression test.
const scaleMissions = 2000

// raceAllocSlack is what the race detector adds to a count of
// allocations (it makes sync.Pool drop some of what is put back).
const raceAllocSlack = 0

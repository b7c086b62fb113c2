//go:build race

package fleet_test

// scaleMissions is smaller under the race detector, which slows the fleet
// about tenfold on a 2-core machine.
const scaleMissions = 500

// raceAllocSlack is what the race detector adds to a count of
// allocations (it makes sync.Pool drop some of what is put back).
const raceAllocSlack = 12

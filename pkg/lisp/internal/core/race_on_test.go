//go:build race

package core

// raceAllocSlack is what the race detector adds to a count of
// allocations (it makes sync.Pool drop some of what is put back).
const raceAllocSlack = 4

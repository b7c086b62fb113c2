//go:build !race

package core

// raceAllocSlack is what the race detector adds to a count of
// allocations: nothing without it.
const raceAllocSlack = 0

// raceKeptKeysSlack: see race_on_test.go.
const raceKeptKeysSlack = 0

// raceKeptScratchBytes: see race_on_test.go.
const raceKeptScratchBytes = 0

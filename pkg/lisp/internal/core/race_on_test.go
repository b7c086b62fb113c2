//go:build race

package core

// raceAllocSlack is what the race detector adds to a count of
// allocations (it makes sync.Pool drop some of what is put back).
const raceAllocSlack = 4

// raceKeptKeysSlack is what a decoder's reader dropped by sync.Pool costs
// a msgpack decode of a record besides: its table of keys, made again.
const raceKeptKeysSlack = 16

// raceKeptScratchBytes is what a decoder's reader dropped by sync.Pool
// costs a msgpack decode of a record besides: its shape cache and scratch
// buffers, made again.
const raceKeptScratchBytes = 1400

package main

import (
	"math"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// cgroupLimitShare is the share of its container's memory limit a worker
// takes as its soft memory limit when neither -soft-memory-limit nor
// GOMEMLIMIT sets one: what the shipped manifests give GOMEMLIMIT (about
// 90%), leaving the rest to what the Go runtime does not count (the
// binary's mappings, thread stacks outside Go).
const cgroupLimitShare = 0.9

// softMemoryLimit is the Go runtime soft memory limit the worker sets,
// and where it comes from: set (-soft-memory-limit, when positive);
// nothing when set is negative, or when GOMEMLIMIT is in the environment
// (the runtime has read it); else cgroupLimitShare of the memory limit
// container reports (memlimit.FromCgroup: the worker's cgroup, v1 or v2,
// found through the process's mounts), when it reports one. 0 means the
// worker leaves the runtime's limit as it is.
func softMemoryLimit(set int64, getenv func(string) string, container memlimit.Provider) (limit int64, from string) {
	switch {
	case set > 0:
		return set, "soft-memory-limit"
	case set < 0 || getenv("GOMEMLIMIT") != "":
		return 0, ""
	}
	l, err := container()
	if err != nil || l == 0 || l >= math.MaxInt64 {
		return 0, "" // no container, or one without a limit
	}
	return int64(float64(l) * cgroupLimitShare), "cgroup"
}

package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// (the runtime has read it); else cgroupLimitShare of the memory limit of
// the worker's cgroup (a container's) read under root, when it has one.
// 0 means the worker leaves the runtime's limit as it is.
func softMemoryLimit(set int64, getenv func(string) string, root string) (limit int64, from string) {
	switch {
	case set > 0:
		return set, "soft-memory-limit"
	case set < 0 || getenv("GOMEMLIMIT") != "":
		return 0, ""
	}
	if l, ok := cgroupMemoryLimit(root); ok {
		return int64(float64(l) * cgroupLimitShare), "cgroup"
	}
	return 0, ""
}

// cgroupMemoryLimit reads the memory limit of this process's cgroup under
// root ("/" but in tests): memory.max of cgroup v2, else
// memory.limit_in_bytes of cgroup v1's memory controller, in the
// process's own cgroup (/proc/self/cgroup) or, inside a container whose
// cgroup is the root of what it sees, at the top. ok is false when there
// is no limit or it cannot be read.
func cgroupMemoryLimit(root string) (limit int64, ok bool) {
	own, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, false
	}
	base := filepath.Join(root, "sys/fs/cgroup")
	sc := bufio.NewScanner(bytes.NewReader(own))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" { // cgroup v2
			if l, found := readLimit(base, parts[2], "memory.max"); found {
				return l, l > 0
			}
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" { // cgroup v1
				if l, found := readLimit(filepath.Join(base, "memory"), parts[2], "memory.limit_in_bytes"); found {
					return l, l > 0
				}
			}
		}
	}
	return 0, false
}

// readLimit reads file in dir/path, else in dir: found is false when
// neither exists; the limit is 0 when the file says there is none ("max",
// or v1's near-2^63 value) or is not a number.
func readLimit(dir, path, file string) (limit int64, found bool) {
	b, err := os.ReadFile(filepath.Join(dir, path, file))
	if err != nil {
		if b, err = os.ReadFile(filepath.Join(dir, file)); err != nil {
			return 0, false
		}
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, true
	}
	l, err := strconv.ParseInt(s, 10, 64)
	if err != nil || l <= 0 || l >= 1<<62 {
		return 0, true
	}
	return l, true
}

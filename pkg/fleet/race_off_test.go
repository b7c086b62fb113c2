//go:build !race

package fleet_test

// scaleMissions is the size of the many-missions regression test.
const scaleMissions = 2000

//go:build race

package fleet_test

// scaleMissions is smaller under the race detector, which slows the fleet
// about tenfold on a 2-core machine.
const scaleMissions = 500

//go:build !race

package messages

// raceBuild: see race_on_test.go.
const raceBuild = false

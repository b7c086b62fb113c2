//go:build !race

package lisp

// raceBuild: see race_on_test.go.
const raceBuild = false

// Package core holds what every stage of the PTC-Lisp interpreter shares
// at run time: the values (numbers, strings, keywords, vectors, maps and
// sets in their persistent and transient forms, closures, lazy
// sequences), host data read in place as views, conversion to and from Go
// data, equality, hashing and printing, the Thread that runs a program
// (step, time, depth and memory limits, calls, the value stack), the
// memory meter, and the decoders that turn a tool's wire bytes into
// values.
//
// It imports no other stage. The reader (package syntax) and the builtins
// (package builtins) build on it, the compiler (package compile) on those,
// and package lisp puts the stages together behind its API. The names it
// exports are for those stages only: the package is internal to pkg/lisp.
package core

// Package syntax reads PTC-Lisp source into forms: lists, vectors, maps,
// sets, symbols and literals, each with the position it was read from, for
// the compiler (package compile) to analyse. Literal values are core
// values; errors are core errors with positions.
package syntax

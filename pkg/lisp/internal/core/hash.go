package core

import (
	"hash/maphash"
	"math/bits"
)

// The process's hash keys and the hashes of strings and integers that
// keywords, maps and equality build on.

// hashSeed and intKeys are chosen at random once, at package
// initialisation, and only read afterwards: every key type hashes under a
// process-wide secret, so a program (or the data it reads) cannot choose
// keys that all share one hash and turn the hash trie into a list
// (hash flooding). Maps and sets iterate and print in key order, never in
// hash order, so the seed changes no result.
var (
	hashSeed = maphash.MakeSeed()
	intKeys  = newIntKeys(hashSeed)
)

// newIntKeys derives hashInt's four 64-bit keys from seed.
func newIntKeys(seed maphash.Seed) (k [4]uint64) {
	for i := range k {
		k[i] = maphash.Comparable(seed, i)
	}
	return k
}

func hashString(s string) uint32 {
	h := maphash.String(hashSeed, s)
	return uint32(h ^ h>>32)
}

// hashInt hashes n under the process's keys: two rounds of a keyed
// 64×64→128-bit multiply folded to 64 bits (the mix of the Go runtime's
// portable memhash and wyhash), a few nanoseconds and inlined.
func hashInt(n int64) uint32 {
	x := uint64(n)
	hi, lo := bits.Mul64(x^intKeys[0], x^intKeys[1])
	hi, lo = bits.Mul64(hi^lo^intKeys[2], intKeys[3]|1)
	h := hi ^ lo
	return uint32(h ^ h>>32)
}

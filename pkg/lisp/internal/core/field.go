package core

// Reading a field of a host record. A program that scans records reads
// the same few fields of maps built the same way, so a keyword keeps an
// inline cache of where its name sat in the last record it read
// (Keyword.slot), much as it keeps the shape of the last interpreter map
// (Keyword.cache). Go offers no such read: the default build reads the
// map as any Go code does (field_plain.go); built with the tag
// ptc_swissmaps, LookupField looks inside the runtime's map where it
// knows the layout (field_swiss.go: a map of up to eight entries is one
// group of slots read by index). The cache is a hint:
// a slot's key is compared with the name on every read (by its bytes'
// address when it is the key string the hint last matched, which records
// decoded with interned keys share, else by content), and a miss falls
// back to the map read.

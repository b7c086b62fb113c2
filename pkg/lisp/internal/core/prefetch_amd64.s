//go:build ptc_swissmaps && !go1.27

#include "textflag.h"

// func prefetchLines(line, group unsafe.Pointer)
//
// Asks for the cache line at line (nil: none) and the five cache lines
// from group (a small map's group). A prefetch neither faults nor waits.
TEXT ·prefetchLines(SB),NOSPLIT,$0-16
	MOVQ line+0(FP), AX
	TESTQ AX, AX
	JZ group
	PREFETCHT0 (AX)
group:
	MOVQ group+8(FP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	RET

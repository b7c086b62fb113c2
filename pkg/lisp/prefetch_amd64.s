#include "textflag.h"

// func prefetchLines(p unsafe.Pointer)
//
// Asks for the five cache lines from p (a small map's group). A prefetch
// neither faults nor waits.
TEXT ·prefetchLines(SB),NOSPLIT,$0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	RET

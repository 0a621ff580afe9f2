//go:build !purego

#include "textflag.h"

// func prefetchBlocks(blocks unsafe.Pointer, nblocks uint64, hs []uint64)
//
// For each hash h, PREFETCHT0 the block hi64(h·nblocks): the same fastrange
// as layout.blockOf. A prefetch retires at once, unlike a load that misses,
// so a whole batch of cache misses is in flight while the CPU works on
// earlier keys.
TEXT ·prefetchBlocks(SB), NOSPLIT|NOFRAME, $0-40
	MOVQ blocks+0(FP), DI
	MOVQ nblocks+8(FP), SI
	MOVQ hs_base+16(FP), BX
	MOVQ hs_len+24(FP), CX
	TESTQ CX, CX
	JZ   done

loop:
	MOVQ (BX), AX
	MULQ SI
	SHLQ $6, DX
	PREFETCHT0 (DI)(DX*1)
	ADDQ $8, BX
	DECQ CX
	JNZ  loop

done:
	RET

#include "textflag.h"

// func prefetchLines(lines unsafe.Pointer, nlines uint64, hs []uint64)
//
// The library's prefetchBlocks (prefetch_amd64.s at the root), copied so
// that the batched limit prefetches exactly as the batched calls do: for
// each hash h, PREFETCHT0 line hi64(h·nlines).
TEXT ·prefetchLines(SB), NOSPLIT|NOFRAME, $0-40
	MOVQ lines+0(FP), DI
	MOVQ nlines+8(FP), SI
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

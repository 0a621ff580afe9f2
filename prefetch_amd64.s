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

// func prefetchPacked(blocks unsafe.Pointer, ps []uint64)
//
// For each packed entry p of a private build (parallel.go), PREFETCHT0
// block p>>32 of blocks.
TEXT ·prefetchPacked(SB), NOSPLIT|NOFRAME, $0-32
	MOVQ blocks+0(FP), DI
	MOVQ ps_base+8(FP), BX
	MOVQ ps_len+16(FP), CX
	TESTQ CX, CX
	JZ   packed_done

packed_loop:
	MOVQ (BX), AX
	SHRQ $32, AX
	SHLQ $6, AX
	PREFETCHT0 (DI)(AX*1)
	ADDQ $8, BX
	DECQ CX
	JNZ  packed_loop

packed_done:
	RET

// func prefetchWrite(p unsafe.Pointer, lines int)
//
// PREFETCHW each of the lines cache lines from p: ask for them in the
// state a write needs, all at once, before the writes come one by one.
// (Go's assembler has no PREFETCHW mnemonic; the bytes are PREFETCHW (AX).
// Where the CPU lacks the instruction, the encoding is a NOP.)
TEXT ·prefetchWrite(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ  p+0(FP), AX
	MOVQ  lines+8(FP), CX
	TESTQ CX, CX
	JZ    write_done

write_loop:
	BYTE $0x0F; BYTE $0x0D; BYTE $0x08
	ADDQ $64, AX
	DECQ CX
	JNZ  write_loop

write_done:
	RET

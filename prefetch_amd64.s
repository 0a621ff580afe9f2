//go:build !purego

#include "textflag.h"

// func prefetchBlocks(blocks *block, nblocks uint64, hs []uint64)
//
// For each hash h, PREFETCHT0 the block hi64(h·nblocks): the same fastrange
// as core.blockOf. A prefetch retires at once, unlike a load that misses,
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

// func prefetchPacked(blocks *block, ps []uint64)
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

// func copyStream(dst, src []uint64)
//
// Copy src's words to dst with non-temporal stores (MOVNTI), which write
// whole lines to memory without first reading them into this core's
// cache, then SFENCE: those stores are weakly ordered, and the fence puts
// them before every later store, the one that hands dst over among them.
TEXT ·copyStream(SB), NOSPLIT|NOFRAME, $0-48
	MOVQ  dst_base+0(FP), DI
	MOVQ  src_base+24(FP), SI
	MOVQ  src_len+32(FP), CX
	TESTQ CX, CX
	JZ    stream_done

stream_loop:
	MOVQ    (SI), AX
	MOVNTIQ AX, (DI)
	ADDQ    $8, SI
	ADDQ    $8, DI
	DECQ    CX
	JNZ     stream_loop

stream_done:
	SFENCE
	RET

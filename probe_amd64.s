//go:build !purego

#include "textflag.h"
#include "go_asm.h"
#include "probe_amd64.h"

// func txOr(b *block, m *block) (committed bool)
//
// TXOR alone, for the test that holds it to what it claims: m ORed into b
// when it reports a commit, nothing written when not.
TEXT ·txOr(SB), NOSPLIT|NOFRAME, $0-17
	MOVQ      b+0(FP), AX
	MOVQ      m+8(FP), DX
	VMOVDQU64 (DX), Z8
	TXOR(tx_or_committed, tx_or_aborted)
	MOVB      $0, committed+16(FP)
	VZEROUPPER
	RET

tx_or_committed:
	MOVB $1, committed+16(FP)
	VZEROUPPER
	RET

// func vecTest(b *block, x uint32, p *vecProbe) bool
TEXT ·vecTest(SB), NOSPLIT|NOFRAME, $0-25
	LANEBITS
	MOVQ b+0(FP), AX
	MOVL x+8(FP), BX
	MOVQ p+16(FP), CX
	// Load the block first: on a large filter it is a cache miss, which
	// should start before the arithmetic rather than wait for the word
	// numbers.
	VMOVDQU64    (AX), Z0
	PROBE(test_done)
	SETCS ret+24(FP)
	VZEROUPPER
	RET

// func vecAdd(b *block, x uint32, p *vecProbe) (present bool)
//
// Tests the key first, as vecTest does, and returns true when its bits are
// all set (TestAndAdd's answer): re-adding a key then costs what a Test
// does, writes nothing, and dirties no cache line. The branch
// predicts well when most adds are new, or most are not.
//
// Otherwise it builds the key's mask (MASK) and ORs it into the block
// with one 64-byte read-modify-write.
TEXT ·vecAdd(SB), NOSPLIT|NOFRAME, $0-25
	LANEBITS
	MOVQ b+0(FP), AX
	MOVL x+8(FP), BX
	MOVQ p+16(FP), CX
	VMOVDQU64    (AX), Z0 // the miss first, as in vecTest
	PROBE(add_tested)
	SETCS    present+24(FP)
	JCS      add_done // all set already
	MASK(Z8, mask_round1)
	VPORQ     Z0, Z8, Z8
	VMOVDQU64 Z8, (AX)

add_done:
	VZEROUPPER
	RET

// func vecAtomicAdd(b *block, x uint32, p *vecProbe) (present bool)
//
// vecAdd for AtomicFilter: it tests first, and writes nothing when the
// key's bits are all set; otherwise it sets them in one transaction
// (TXOR) or, where there is none or it aborts, with one LOCK OR for each
// word its mask touches.
// Every word is read whole by the vector load (8-byte aligned loads are
// atomic on amd64) and only ever ORed, so a racing Add loses nothing.
//
// present is vecAdd's: of goroutines racing to add one new key, any that
// writes saw a bit missing and reports false, so at least one does unless
// other keys had set all its bits (TestAndAdd's contract).
TEXT ·vecAtomicAdd(SB), NOSPLIT|NOFRAME, $0-25
	LANEBITS
	MOVQ b+0(FP), AX
	MOVL x+8(FP), BX
	MOVQ p+16(FP), CX
	VMOVDQU64    (AX), Z0
	PROBE(atomic_tested)
	SETCS    present+24(FP)
	JCS      atomic_done
	MASK(Z8, mask_round2)
	TXOR(atomic_done, atomic_locked)
	ATOMICOR(atomic_word)

atomic_done:
	VZEROUPPER
	RET

// func vecTestHashes(blocks *block, nblocks uint64, hs []uint64, results []bool, p *vecProbe)
//
// vecTest of every hash of hs, its block found by fastrange as
// core.blockOf does, the answers written to results: the batched
// calls' probe, with no call, no VZEROUPPER and no Go loop per key.
// results is at least as long as hs.
TEXT ·vecTestHashes(SB), NOSPLIT|NOFRAME, $0-72
	LANEBITS
	MOVQ blocks+0(FP), DI
	MOVQ nblocks+8(FP), R12
	MOVQ hs_base+16(FP), R8
	MOVQ hs_len+24(FP), R9
	MOVQ results_base+40(FP), R10
	MOVQ p+64(FP), CX
	TESTQ R9, R9
	JZ    test_hashes_done
	CMPQ HALVES(CX), $1
	JNE  test_hashes_loop
	LOAD8

	// k ≤ 8: the constants stay in registers, and no key tests the halves.
test8_hashes_loop:
	MOVQ (R8), AX
	MOVL AX, BX
	MULQ R12
	SHLQ $6, DX
	VMOVDQU64 (DI)(DX*1), Z0
	TEST8
	ALLSET
	SETCS    (R10)
	ADDQ     $8, R8
	INCQ     R10
	DECQ     R9
	JNZ      test8_hashes_loop
	VZEROUPPER
	RET

test_hashes_loop:
	MOVQ (R8), AX
	MOVL AX, BX // the residue, zero-extended
	MULQ R12    // DX = the block
	SHLQ $6, DX
	VMOVDQU64    (DI)(DX*1), Z0
	PROBE(test_hashes_tested)
	SETCS    (R10)
	ADDQ     $8, R8
	INCQ     R10
	DECQ     R9
	JNZ      test_hashes_loop
	VZEROUPPER

test_hashes_done:
	RET

// func vecAddHashes(blocks *block, nblocks uint64, hs []uint64, p *vecProbe)
//
// vecAdd of every hash of hs, as vecTestHashes does vecTest.
TEXT ·vecAddHashes(SB), NOSPLIT|NOFRAME, $0-48
	LANEBITS
	MOVQ blocks+0(FP), DI
	MOVQ nblocks+8(FP), R12
	MOVQ hs_base+16(FP), R8
	MOVQ hs_len+24(FP), R9
	MOVQ p+40(FP), CX
	TESTQ R9, R9
	JZ    add_hashes_done
	CMPQ HALVES(CX), $1
	JNE  add_hashes_loop
	LOAD8

	// k ≤ 8, as in vecTestHashes.
add8_hashes_loop:
	MOVQ (R8), AX
	MOVL AX, BX
	MULQ R12
	SHLQ $6, DX
	LEAQ (DI)(DX*1), R11
	VMOVDQU64 (R11), Z0
	TEST8
	ALLSET
	JCS      add8_hashes_next
	MASK(Z8, mask_round3)
	VPORQ     Z0, Z8, Z8
	VMOVDQU64 Z8, (R11)

add8_hashes_next:
	ADDQ $8, R8
	DECQ R9
	JNZ  add8_hashes_loop
	VZEROUPPER
	RET

add_hashes_loop:
	MOVQ (R8), AX
	MOVL AX, BX
	MULQ R12
	SHLQ $6, DX
	LEAQ (DI)(DX*1), R11 // the block; MASK takes DX
	VMOVDQU64    (R11), Z0
	PROBE(add_hashes_tested)
	JCS      add_hashes_next // all set already
	MASK(Z8, mask_round4)
	VPORQ     Z0, Z8, Z8
	VMOVDQU64 Z8, (R11)

add_hashes_next:
	ADDQ $8, R8
	DECQ R9
	JNZ  add_hashes_loop
	VZEROUPPER

add_hashes_done:
	RET

// func vecAddPacked(blocks *block, ps []uint64, p *vecProbe)
//
// vecAdd of every packed entry of a private build (parallel.go): block
// e>>32 of blocks, residue uint32(e).
TEXT ·vecAddPacked(SB), NOSPLIT|NOFRAME, $0-40
	LANEBITS
	MOVQ blocks+0(FP), DI
	MOVQ ps_base+8(FP), R8
	MOVQ ps_len+16(FP), R9
	MOVQ p+32(FP), CX
	TESTQ R9, R9
	JZ    add_packed_done

add_packed_loop:
	MOVQ (R8), AX
	MOVL AX, BX
	SHRQ $32, AX
	SHLQ $6, AX
	LEAQ (DI)(AX*1), R11
	VMOVDQU64    (R11), Z0
	PROBE(add_packed_tested)
	JCS      add_packed_next
	MASK(Z8, mask_round5)
	VPORQ     Z0, Z8, Z8
	VMOVDQU64 Z8, (R11)

add_packed_next:
	ADDQ $8, R8
	DECQ R9
	JNZ  add_packed_loop
	VZEROUPPER

add_packed_done:
	RET

// Bit 8·lane of each of the eight lanes: ALLSET's mask.
DATA ·laneBits+0(SB)/8, $0x0101010101010101
GLOBL ·laneBits(SB), RODATA|NOPTR, $8

DATA ·one+0(SB)/8, $1
GLOBL ·one(SB), RODATA|NOPTR, $8

// Minus the first bit of each word: 0, -64, ..., -448.
DATA ·wordStarts+0(SB)/8, $0
DATA ·wordStarts+8(SB)/8, $-64
DATA ·wordStarts+16(SB)/8, $-128
DATA ·wordStarts+24(SB)/8, $-192
DATA ·wordStarts+32(SB)/8, $-256
DATA ·wordStarts+40(SB)/8, $-320
DATA ·wordStarts+48(SB)/8, $-384
DATA ·wordStarts+56(SB)/8, $-448
GLOBL ·wordStarts(SB), RODATA|NOPTR, $64

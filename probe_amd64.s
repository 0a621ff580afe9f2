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

// The single-block probes of a core, (l *core, b *block, x uint32): the
// vector probe where l has one (VEC), and otherwise a jump to the
// generated probe's Go function of the same arguments, which returns to
// the caller (scalarTest and the others, probe_amd64.go). The choice
// between the two is made here, once for every caller, in the call the
// caller makes anyway.

// func probeTest(l *core, b *block, x uint32) bool
TEXT ·probeTest(SB), NOSPLIT|NOFRAME, $0-25
	VEC(probe_test_scalar)
	TESTED(probe_test_tested)
	SETCS ret+24(FP)
	VZEROUPPER
	RET

probe_test_scalar:
	JMP ·scalarTest(SB)

// func probeAtomicTest(l *core, b *block, x uint32) bool
//
// probeTest for AtomicFilter: the vector load reads each aligned word
// whole, as atomic.LoadUint64 does on amd64, so only the scalar way out
// differs (atomic loads).
TEXT ·probeAtomicTest(SB), NOSPLIT|NOFRAME, $0-25
	VEC(probe_atomic_test_scalar)
	TESTED(probe_atomic_test_tested)
	SETCS ret+24(FP)
	VZEROUPPER
	RET

probe_atomic_test_scalar:
	JMP ·scalarAtomicTest(SB)

// func probeTestAndAdd(l *core, b *block, x uint32) (present bool)
//
// Tests the key first, and returns true when its bits are all set
// (TestAndAdd's answer): re-adding a key then costs what a test does,
// writes nothing, and dirties no cache line. The branch predicts well
// when most adds are new, or most are not. Otherwise it builds the key's
// mask (MASK) and ORs it into the block with one 64-byte
// read-modify-write.
TEXT ·probeTestAndAdd(SB), NOSPLIT|NOFRAME, $0-25
	VEC(probe_test_add_scalar)
	TESTED(probe_test_add_tested)
	SETCS present+24(FP)
	JCS   probe_test_add_done // all set already
	MASK(Z8, mask_round1)
	VPORQ     Z0, Z8, Z8
	VMOVDQU64 Z8, (AX)

probe_test_add_done:
	VZEROUPPER
	RET

probe_test_add_scalar:
	JMP ·scalarTestAndAdd(SB)

// func probeAdd(l *core, b *block, x uint32)
//
// probeTestAndAdd without the answer, whose scalar way out adds without
// testing first.
TEXT ·probeAdd(SB), NOSPLIT|NOFRAME, $0-20
	VEC(probe_add_scalar)
	TESTED(probe_add_tested)
	JCS probe_add_done
	MASK(Z8, mask_round6)
	VPORQ     Z0, Z8, Z8
	VMOVDQU64 Z8, (AX)

probe_add_done:
	VZEROUPPER
	RET

probe_add_scalar:
	JMP ·scalarAdd(SB)

// func probeAtomicAdd(l *core, b *block, x uint32) (present bool)
//
// probeTestAndAdd for AtomicFilter: it tests first, and writes nothing
// when the key's bits are all set; otherwise it sets them in one
// transaction (TXOR) or, where there is none or it aborts, with one LOCK
// OR for each word its mask touches. Every word is read whole by the
// vector load (8-byte aligned loads are atomic on amd64) and only ever
// ORed, so a racing Add loses nothing.
//
// present is probeTestAndAdd's: of goroutines racing to add one new key,
// any that writes saw a bit missing and reports false, so at least one
// does unless other keys had set all its bits (TestAndAdd's contract).
TEXT ·probeAtomicAdd(SB), NOSPLIT|NOFRAME, $0-25
	VEC(probe_atomic_add_scalar)
	TESTED(probe_atomic_add_tested)
	SETCS present+24(FP)
	JCS   probe_atomic_add_done
	MASK(Z8, mask_round2)
	TXOR(probe_atomic_add_done, probe_atomic_add_locked)
	ATOMICOR(probe_atomic_add_word)

probe_atomic_add_done:
	VZEROUPPER
	RET

probe_atomic_add_scalar:
	JMP ·scalarAtomicAdd(SB)

// func vecTestHashes(blocks *block, nblocks uint64, hs []uint64, results []bool, p *vecProbe)
//
// probeTest's vector probe of every hash of hs, its block found by
// fastrange as core.blockOf does, the answers written to results: the
// batched calls' probe, with no call, no VZEROUPPER and no Go loop per
// key.
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
// probeTestAndAdd's vector probe of every hash of hs, as vecTestHashes does
// probeTest's.
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
// probeTestAndAdd's vector probe of every packed entry of a private build
// (parallel.go): block
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

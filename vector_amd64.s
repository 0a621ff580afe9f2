//go:build !purego

#include "textflag.h"

// vecProbe field offsets (vector_amd64.go).
#define INV 0
#define SIZE 128
#define OFFSET 256
#define HALVES 384
#define ROUNDS 392
#define CANDIDATES 400

// BITS computes, in the eight qword lanes of dst, the bit positions of x
// (broadcast as float64 in Z1) for the lanes of the vecProbe at CX+half:
// offset + x - trunc(x*inv)*size, exact (see vector_amd64.go): the
// quotient truncated quietly (VRNDSCALEPD mode 11), then one fused
// multiply-add.
#define BITS(half, dst) \
	VMULPD       (INV+half)(CX), Z1, Z2     \
	VRNDSCALEPD  $11, Z2, Z2                \
	VADDPD       (OFFSET+half)(CX), Z1, dst \
	VFNMADD231PD (SIZE+half)(CX), Z2, dst   \
	VCVTTPD2QQ   dst, dst

// TESTBITS sets mask k to the lanes of bits whose bit is set in the block
// in Z0: VPERMQ fetches each lane's word (bit/64) of the block, VPSRLVQ
// brings the bit (bit%64) down to bit 0. bits is left as it was.
#define TESTBITS(bits, k) \
	VPSRLQ       $6, bits, Z4               \
	VPERMQ       Z0, Z4, Z5                 \
	VPANDQ.BCST  ·low6(SB), bits, Z6        \
	VPSRLVQ      Z6, Z5, Z5                 \
	VPTESTMQ.BCST ·one(SB), Z5, k

// RESIDUE puts the residue in BX (zero-extended) in every lane of Z1 as
// float64, for BITS. Unlike VCVTSI2SDQ, which merges into its
// destination, it depends on nothing left by an earlier key.
#define RESIDUE \
	VPBROADCASTQ BX, Z1 \
	VCVTQQ2PD    Z1, Z1

// LOAD8 loads, for the loops over many hashes with k ≤ 8 (one half), the
// constants that BITS and TESTBITS read from memory on every key: inverse,
// size and offset of each lane in Z20-Z22, 63 and 1 broadcast in Z23-Z24.
#define LOAD8 \
	VMOVUPD      (INV)(CX), Z20    \
	VMOVUPD      (SIZE)(CX), Z21   \
	VMOVUPD      (OFFSET)(CX), Z22 \
	VPBROADCASTQ ·low6(SB), Z23    \
	VPBROADCASTQ ·one(SB), Z24

// TEST8 is RESIDUE, BITS and TESTBITS for the residue in BX, with LOAD8's
// constants: bit positions in Z3, mask K1 of the lanes whose bit is set
// in the block in Z0.
#define TEST8 \
	RESIDUE                        \
	VMULPD       Z20, Z1, Z2       \
	VRNDSCALEPD  $11, Z2, Z2       \
	VADDPD       Z22, Z1, Z3       \
	VFNMADD231PD Z21, Z2, Z3       \
	VCVTTPD2QQ   Z3, Z3            \
	VPSRLQ       $6, Z3, Z4        \
	VPERMQ       Z0, Z4, Z5        \
	VPANDQ       Z23, Z3, Z6       \
	VPSRLVQ      Z6, Z5, Z5        \
	VPTESTMQ     Z24, Z5, K1

// MASK builds in dst the key's 512-bit mask from its bit positions in Z3
// (lanes 0-7) and Z13 (lanes 8-15): word w of the mask gathers the
// partitions that reach into word w. For each of the table's candidate
// rounds, VPERMI2Q picks for every word w one candidate lane's bit, and
// shifting 1 by bit-64w sets it there, while VPSLLVQ gives 0 for a
// candidate whose bit lies in another word (a shift below 0, huge when
// unsigned, or of 64 and up). Uses DX, SI, Z10-Z12.
#define MASK(dst, round) \
	VMOVDQU64    ·wordStarts(SB), Z10 \
	VPBROADCASTQ ·one(SB), Z11        \
	VPXORQ       dst, dst, dst        \
	MOVQ         ROUNDS(CX), DX       \
	LEAQ         CANDIDATES(CX), SI   \
	round:                            \
	VMOVDQU64 (SI), Z12               \
	VPERMI2Q  Z13, Z3, Z12            \
	VPADDQ    Z10, Z12, Z12           \
	VPSLLVQ   Z12, Z11, Z12           \
	VPORQ     Z12, dst, dst           \
	ADDQ      $64, SI                 \
	DECQ      DX                      \
	JNZ       round

// func vecTest(b *block, x uint32, p *vecProbe) bool
TEXT ·vecTest(SB), NOSPLIT|NOFRAME, $0-25
	MOVQ b+0(FP), AX
	MOVL x+8(FP), BX
	MOVQ p+16(FP), CX
	// Load the block first: on a large filter it is a cache miss, which
	// should start before the arithmetic rather than wait for the word
	// numbers.
	VMOVDQU64    (AX), Z0
	RESIDUE
	BITS(0, Z3)
	TESTBITS(Z3, K1)
	CMPQ HALVES(CX), $1
	JEQ  test_done
	BITS(64, Z13)
	TESTBITS(Z13, K2)
	KANDB K2, K1, K1

test_done:
	KORTESTB K1, K1 // CF = all eight lanes set
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
	MOVQ b+0(FP), AX
	MOVL x+8(FP), BX
	MOVQ p+16(FP), CX
	VMOVDQU64    (AX), Z0 // the miss first, as in vecTest
	RESIDUE
	BITS(0, Z3)
	TESTBITS(Z3, K1)
	CMPQ HALVES(CX), $1
	JEQ  add_tested
	BITS(64, Z13)
	TESTBITS(Z13, K2)
	KANDB K2, K1, K1

add_tested:
	KORTESTB K1, K1
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
// key's bits are all set; otherwise it sets them with one LOCK OR for
// each word its mask touches.
// Every word is read whole by the vector load (8-byte aligned loads are
// atomic on amd64) and only ever ORed, so a racing Add loses nothing.
//
// present is vecAdd's: of goroutines racing to add one new key, any that
// writes saw a bit missing and reports false, so at least one does unless
// other keys had set all its bits (TestAndAdd's contract).
TEXT ·vecAtomicAdd(SB), NOSPLIT, $64-25
	MOVQ b+0(FP), AX
	MOVL x+8(FP), BX
	MOVQ p+16(FP), CX
	VMOVDQU64    (AX), Z0
	RESIDUE
	BITS(0, Z3)
	TESTBITS(Z3, K1)
	CMPQ HALVES(CX), $1
	JEQ  atomic_tested
	BITS(64, Z13)
	TESTBITS(Z13, K2)
	KANDB K2, K1, K1

atomic_tested:
	KORTESTB K1, K1
	SETCS    present+24(FP)
	JCS      atomic_done
	MASK(Z8, mask_round2)
	// DX = the words the mask touches, whether the block has their bits
	// or not: a loop over the words that lack a bit would end on a branch
	// that depends on the block, and when it mispredicts (its trip count
	// varies from key to key) the CPU finds out only once the block has
	// arrived and throws away the work on the next keys done meanwhile.
	// The mask depends on x alone, so this loop's exit is known early.
	VPTESTMQ  Z8, Z8, K3
	KMOVB     K3, DX
	VMOVDQU64 Z8, (SP)

atomic_word:
	BSFQ DX, R8
	MOVQ (SP)(R8*8), R9
	LOCK
	ORQ  R9, (AX)(R8*8)
	BLSRQ DX, DX
	JNZ  atomic_word

atomic_done:
	VZEROUPPER
	RET

// func vecTestHashes(blocks unsafe.Pointer, nblocks uint64, hs []uint64, results []bool, p *vecProbe)
//
// vecTest of every hash of hs, its block found by fastrange as
// layout.blockOf does, the answers written to results: the batched
// calls' probe, with no call, no VZEROUPPER and no Go loop per key.
// results is at least as long as hs.
TEXT ·vecTestHashes(SB), NOSPLIT|NOFRAME, $0-72
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
	KORTESTB K1, K1
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
	RESIDUE
	BITS(0, Z3)
	TESTBITS(Z3, K1)
	CMPQ HALVES(CX), $1
	JEQ  test_hashes_tested
	BITS(64, Z13)
	TESTBITS(Z13, K2)
	KANDB K2, K1, K1

test_hashes_tested:
	KORTESTB K1, K1
	SETCS    (R10)
	ADDQ     $8, R8
	INCQ     R10
	DECQ     R9
	JNZ      test_hashes_loop
	VZEROUPPER

test_hashes_done:
	RET

// func vecAddHashes(blocks unsafe.Pointer, nblocks uint64, hs []uint64, p *vecProbe)
//
// vecAdd of every hash of hs, as vecTestHashes does vecTest.
TEXT ·vecAddHashes(SB), NOSPLIT|NOFRAME, $0-48
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
	KORTESTB K1, K1
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
	RESIDUE
	BITS(0, Z3)
	TESTBITS(Z3, K1)
	CMPQ HALVES(CX), $1
	JEQ  add_hashes_tested
	BITS(64, Z13)
	TESTBITS(Z13, K2)
	KANDB K2, K1, K1

add_hashes_tested:
	KORTESTB K1, K1
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

// func vecAddPacked(blocks unsafe.Pointer, ps []uint64, p *vecProbe)
//
// vecAdd of every packed entry of a private build (parallel.go): block
// e>>32 of blocks, residue uint32(e).
TEXT ·vecAddPacked(SB), NOSPLIT|NOFRAME, $0-40
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
	RESIDUE
	BITS(0, Z3)
	TESTBITS(Z3, K1)
	CMPQ HALVES(CX), $1
	JEQ  add_packed_tested
	BITS(64, Z13)
	TESTBITS(Z13, K2)
	KANDB K2, K1, K1

add_packed_tested:
	KORTESTB K1, K1
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

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv() (a, d uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, a+0(FP)
	MOVL DX, d+4(FP)
	RET

DATA ·one+0(SB)/8, $1
GLOBL ·one(SB), RODATA|NOPTR, $8

DATA ·low6+0(SB)/8, $63
GLOBL ·low6(SB), RODATA|NOPTR, $8

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

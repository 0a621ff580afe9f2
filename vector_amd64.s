//go:build !purego

#include "textflag.h"
#include "go_asm.h"

// Every routine that touches a 512-bit register ends with VZEROUPPER: with
// keyTest's and keyAdd's left out, Test and Add of a 10^6-key filter took
// 150 ns a key instead of 10 on an Intel Xeon with AMX
// (BenchmarkLimitsPaired), the SSE code that Go runs between calls paying
// for the dirty upper halves.

// vecProbe's field offsets, from the go_asm.h the compiler writes.
#define MAGIC vecProbe_magic
#define SIZE vecProbe_size
#define OFFSET vecProbe_offset
#define HALVES vecProbe_halves
#define ROUNDS vecProbe_rounds
#define CANDIDATES vecProbe_candidates

// BITS computes, in the eight qword lanes of dst, the bit positions of the
// residue x in every lane of Z1 for the lanes of the vecProbe at CX+half:
// offset + x mod size, by Lemire's direct remainder with 52-bit fractions
// (see vector_amd64.go). VPMADD52LUQ leaves magic·x mod 2^52, the fraction
// of x/size, and VPMADD52HUQ adds its product with size, shifted down 52
// bits, to the offset: two integer multiply-adds, where a conversion to
// float64 and back would be four operations in a longer chain. Z1 is left
// as it was; uses Z2.
#define BITS(half, dst) \
	VPXORQ      Z2, Z2, Z2               \
	VPMADD52LUQ (MAGIC+half)(CX), Z1, Z2 \
	VMOVDQU64   (OFFSET+half)(CX), dst   \
	VPMADD52HUQ (SIZE+half)(CX), Z2, dst

// TESTBITS sets in mask k, for each lane of bits, bit 8·lane when that
// bit is set in the block in Z0: VPERMQ fetches each lane's word (bit/64)
// of the block, and VPSHUFBITQMB picks bit bit%64 of it (the low six bits
// of the lane's first byte; the other bytes pick bits nobody reads).
// ALLSET then asks whether they all are. bits is left as it was.
#define TESTBITS(bits, k) \
	VPSRLQ       $6, bits, Z4 \
	VPERMQ       Z0, Z4, Z5   \
	VPSHUFBITQMB bits, Z5, k

// ALLSET sets CF when TESTBITS found every lane's bit set in K1: K7 holds
// bit 8·lane of every lane (LANEBITS), and CF = (K7 &^ K1) == 0.
#define ALLSET KTESTQ K7, K1

// LANEBITS loads ALLSET's constant into K7.
#define LANEBITS KMOVQ ·laneBits(SB), K7

// RESIDUE puts the residue in BX, zero-extended, in every lane of Z1.
#define RESIDUE VPBROADCASTQ BX, Z1

// LANES0 is RESIDUE, BITS and TESTBITS for lanes 0-7 (partitions 0-7)
// into K1; LANES8 is BITS and TESTBITS for lanes 8-15, ANDed into K1.
#define LANES0 \
	RESIDUE          \
	BITS(0, Z3)      \
	TESTBITS(Z3, K1)

#define LANES8 \
	BITS(64, Z13)     \
	TESTBITS(Z13, K2) \
	KANDQ K2, K1, K1

// PROBE tests the residue in BX against the block in Z0, the vector probe
// in CX: LANES0, and LANES8 when the probe has them, then ALLSET, which
// leaves CF set when every bit of the key is. tested is a label of the
// caller's, for the skip past the second half. PROBE8 and PROBE16 are
// PROBE for a probe known to have one half (k ≤ 8) or two, with no test
// of HALVES.
#define PROBE(tested) \
	LANES0              \
	CMPQ HALVES(CX), $1 \
	JEQ  tested         \
	LANES8              \
tested:                 \
	ALLSET

#define PROBE8 \
	LANES0 \
	ALLSET

#define PROBE16 \
	LANES0 \
	LANES8 \
	ALLSET

// LOAD8 loads, for the loops over many hashes with k ≤ 8 (one half), the
// constants that BITS reads from memory on every key: magic, size and
// offset of each lane in Z20-Z22.
#define LOAD8 \
	VMOVDQU64 (MAGIC)(CX), Z20  \
	VMOVDQU64 (SIZE)(CX), Z21   \
	VMOVDQU64 (OFFSET)(CX), Z22

// TEST8 is RESIDUE, BITS and TESTBITS for the residue in BX, with LOAD8's
// constants: bit positions in Z3, K1 as TESTBITS leaves it.
#define TEST8 \
	RESIDUE                     \
	VPXORQ       Z2, Z2, Z2     \
	VPMADD52LUQ  Z20, Z1, Z2    \
	VMOVDQA64    Z22, Z3        \
	VPMADD52HUQ  Z21, Z2, Z3    \
	VPSRLQ       $6, Z3, Z4     \
	VPERMQ       Z0, Z4, Z5     \
	VPSHUFBITQMB Z3, Z5, K1

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

// ATOMICOR ORs the key's mask in Z8 into the block at AX with one LOCK OR
// for each word the mask touches, whether the block has its bits or not:
// a loop over the words that lack a bit would end on a branch that
// depends on the block, and when it mispredicts (its trip count varies
// from key to key) the CPU finds out only once the block has arrived and
// throws away the work on the next keys done meanwhile. The mask depends
// on x alone, so this loop's exit is known early. The words come out of a
// register, packed by VPCOMPRESSQ: every locked OR is a full fence, and a
// load between two of them (from a copy of the mask on the stack) would
// wait for the first. Uses DX, R8, R9, K3, Z9.
#define ATOMICOR(word) \
	VPTESTMQ    Z8, Z8, K3 \
	KMOVB       K3, DX     \
	VPCOMPRESSQ Z8, K3, Z9 \
word:                      \
	BSFQ    DX, R8         \
	VMOVQ   X9, R9         \
	LOCK                   \
	ORQ     R9, (AX)(R8*8) \
	VALIGNQ $1, Z9, Z9, Z9 \
	BLSRQ   DX, DX         \
	JNZ     word

// TXOR ORs the key's mask in Z8 into the block at AX in one hardware
// transaction (Intel TSX RTM) where useRTM says the CPU commits them, and
// jumps to done; the line is read again inside the transaction, so the
// read, the OR and the 64-byte store are one atomic step, as the locked
// ORs are word by word. When the transaction aborts (another core touched
// the line, an interrupt) it writes nothing, and the code after TXOR, the
// locked ORs, runs instead; so it does where useRTM is false. An abort
// leaves its status in AX, so the block's address waits in R10. Uses R10,
// Z9.
#define TXOR(done, locked) \
	MOVQ   AX, R10         \
	CMPB   ·useRTM(SB), $0 \
	JEQ    locked          \
	XBEGIN locked          \
	VPORQ  (R10), Z8, Z9   \
	VMOVDQU64 Z9, (R10)    \
	XEND                   \
	JMP    done            \
locked:                    \
	MOVQ   R10, AX

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

// func vecTestHashes(blocks unsafe.Pointer, nblocks uint64, hs []uint64, results []bool, p *vecProbe)
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

// func vecAddHashes(blocks unsafe.Pointer, nblocks uint64, hs []uint64, p *vecProbe)
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

// func vecAddPacked(blocks unsafe.Pointer, ps []uint64, p *vecProbe)
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

// Bit 8·lane of each of the eight lanes: ALLSET's mask.
DATA ·laneBits+0(SB)/8, $0x0101010101010101
GLOBL ·laneBits(SB), RODATA|NOPTR, $8

// XXH3's avalanche multiplier, for IMULQ from memory: one instruction
// where a constant would need a register loaded first.
DATA ·avalanchePrime+0(SB)/8, $0x165667919e3779f9
GLOBL ·avalanchePrime(SB), RODATA|NOPTR, $8

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

// The single-key calls (Filter's Test, TestString, Add and AddString,
// AtomicFilter's Add and AddString) hash the key here too, in the same
// call as the probe: a Go hash, a Go frame and a second call around the
// probe cost Test 20-30% at 10^6 and 3·10^7 keys (BenchmarkLimitsPaired),
// where the whole call is a few dozen instructions beside the limit's. HASH is XXH3-64 with a seed, as
// github.com/zeebo/xxh3's HashSeed computes it, for keys of up to 128
// bytes (TestKeyHashMatchesXXH3, FuzzKeyHash); longer keys go to the Go
// hash, where the hashing outweighs a call.

// AVALANCHE is XXH3's final mix of h, a register it overwrites, into AX;
// uses DX.
#define AVALANCHE(h) \
	MOVQ  h, DX                  \
	SHRQ  $37, DX                \
	XORQ  DX, h                  \
	IMULQ ·avalanchePrime(SB), h \
	MOVQ  h, AX                  \
	SHRQ  $32, AX                \
	XORQ  h, AX

// AVALANCHE_SMALL is XXH64's final mix of h in AX, which XXH3 uses for
// keys of 0 to 3 bytes; uses DX.
#define AVALANCHE_SMALL \
	MOVQ  AX, DX                  \
	SHRQ  $33, DX                 \
	XORQ  DX, AX                  \
	MOVQ  $0xc2b2ae3d27d4eb4f, DX \
	IMULQ DX, AX                  \
	MOVQ  AX, DX                  \
	SHRQ  $29, DX                 \
	XORQ  DX, AX                  \
	MOVQ  $0x165667b19e3779f9, DX \
	IMULQ DX, AX                  \
	MOVQ  AX, DX                  \
	SHRQ  $32, DX                 \
	XORQ  DX, AX

// FOLD adds to R10 the folded 128-bit product of the key's words at a and
// b, keyed by the words of the core's secret (in DI) at byte offset off
// and off+8, which hold the seed already; uses AX, CX, DX.
#define FOLD(a, b, off) \
	MOVQ (core_secret+off)(DI), AX   \
	XORQ a, AX                         \
	MOVQ (core_secret+off+8)(DI), CX \
	XORQ b, CX                         \
	MULQ CX                            \
	XORQ DX, AX                        \
	ADDQ AX, R10

// HASH leaves in AX the hash of the R11 bytes at SI with the seed of the
// core in DI, or jumps to long when there are more than 128. Uses CX,
// DX, R9, R10. The constants are XXH3's primes and, for up to 16 bytes,
// words of its default secret; for 17 to 128 bytes the secret comes from
// the core, with the seed folded in already (hashSecret), two
// instructions fewer a pair of words. Keys of 17 to 32 bytes run
// straight through from the routine's start, which the linker aligns, with
// no branch taken; the other lengths are HASH_OUT's, which each routine
// places after its last RET. (With the 17-32-byte path at a misaligned
// label, Add measured 1.27x the limit at 3·10^7 instead of 1.08x.)
#define HASH(long)                                                    \
	CMPQ  R11, $16                                                \
	JBE   hash_16                                                 \
	CMPQ  R11, $32                                                \
	JA    hash_33                                                 \
	MOVQ  $0x9e3779b185ebca87, R10                                \
	IMULQ R11, R10                                                \
hash_pair1:                                                           \
	FOLD(0(SI), 8(SI), 0)                                         \
	FOLD(-16(SI)(R11*1), -8(SI)(R11*1), 16)                       \
	AVALANCHE(R10)                                                \
hashed:

// HASH_OUT is the rest of HASH: keys of up to 16 bytes, and of 33 to
// 128, which rejoin it at hash_pair1 or hashed.
#define HASH_OUT(long)                                                   \
hash_16:                                                                 \
	CMPQ R11, $8                                                     \
	JA   hash_9                                                      \
	CMPQ R11, $3                                                     \
	JA   hash_4                                                      \
	TESTQ R11, R11                                                   \
	JZ   hash_0                                                      \
	/* 1 to 3 bytes: first, middle and last byte, and the length */  \
	MOVBQZX (SI), AX                                                 \
	MOVQ    R11, CX                                                  \
	SHRQ    $1, CX                                                   \
	MOVBQZX (SI)(CX*1), CX                                           \
	MOVBQZX -1(SI)(R11*1), DX                                        \
	SHLQ    $16, AX                                                  \
	SHLQ    $24, CX                                                  \
	ORQ     CX, AX                                                   \
	ORQ     DX, AX                                                   \
	MOVQ    R11, CX                                                  \
	SHLQ    $8, CX                                                   \
	ORQ     CX, AX                                                   \
	MOVQ    $0x87275a9b, CX                                          \
	ADDQ    core_seed(DI), CX                                      \
	XORQ    CX, AX                                                   \
	AVALANCHE_SMALL                                                  \
	JMP     hashed                                                   \
hash_0:                                                                  \
	MOVQ $0x8726f9105dc21ddc, AX                                     \
	XORQ core_seed(DI), AX                                         \
	AVALANCHE_SMALL                                                  \
	JMP  hashed                                                      \
hash_4:                                                                  \
	/* 4 to 8 bytes: the first and last four, and rrmxmx */          \
	MOVQ    core_seed(DI), R9                                      \
	MOVL    R9, DX                                                   \
	BSWAPL  DX                                                       \
	SHLQ    $32, DX                                                  \
	XORQ    R9, DX                                                   \
	MOVQ    $0xc73ab174c5ecd5a2, CX                                  \
	SUBQ    DX, CX                                                   \
	MOVL    (SI), AX                                                 \
	MOVL    -4(SI)(R11*1), DX                                        \
	SHLQ    $32, AX                                                  \
	ADDQ    DX, AX                                                   \
	XORQ    CX, AX                                                   \
	MOVQ    AX, CX                                                   \
	ROLQ    $49, CX                                                  \
	MOVQ    AX, DX                                                   \
	ROLQ    $24, DX                                                  \
	XORQ    CX, AX                                                   \
	XORQ    DX, AX                                                   \
	MOVQ    $0x9fb21c651e98df25, CX                                  \
	IMULQ   CX, AX                                                   \
	MOVQ    AX, DX                                                   \
	SHRQ    $35, DX                                                  \
	ADDQ    R11, DX                                                  \
	XORQ    DX, AX                                                   \
	IMULQ   CX, AX                                                   \
	MOVQ    AX, DX                                                   \
	SHRQ    $28, DX                                                  \
	XORQ    DX, AX                                                   \
	JMP     hashed                                                   \
hash_9:                                                                  \
	/* 9 to 16 bytes: the first and last eight */                    \
	MOVQ    $0x6782737bea4239b9, AX                                  \
	ADDQ    core_seed(DI), AX                                      \
	XORQ    (SI), AX                                                 \
	MOVQ    $0xaf56bc3b0996523a, CX                                  \
	SUBQ    core_seed(DI), CX                                      \
	XORQ    -8(SI)(R11*1), CX                                        \
	MOVQ    AX, R10                                                  \
	BSWAPQ  R10                                                      \
	ADDQ    CX, R10                                                  \
	ADDQ    R11, R10                                                 \
	MULQ    CX                                                       \
	XORQ    DX, AX                                                   \
	ADDQ    AX, R10                                                  \
	AVALANCHE(R10)                                                   \
	JMP     hashed                                                   \
	/* 33 to 128 bytes: the pairs past the first, then hash_pair1 */ \
hash_33:                                                                 \
	CMPQ  R11, $128                                                  \
	JA    long                                                       \
	MOVQ  $0x9e3779b185ebca87, R10                                   \
	IMULQ R11, R10                                                   \
	CMPQ  R11, $64                                                   \
	JLE   hash_pair2                                                 \
	CMPQ  R11, $96                                                   \
	JLE   hash_pair3                                                 \
	FOLD(48(SI), 56(SI), 96)                                         \
	FOLD(-64(SI)(R11*1), -56(SI)(R11*1), 112)                        \
hash_pair3:                                                              \
	FOLD(32(SI), 40(SI), 64)                                         \
	FOLD(-48(SI)(R11*1), -40(SI)(R11*1), 80)                         \
hash_pair2:                                                              \
	FOLD(16(SI), 24(SI), 32)                                         \
	FOLD(-32(SI)(R11*1), -24(SI)(R11*1), 48)                         \
	JMP   hash_pair1

// KEY loads the arguments of keyTest and keyAdd and hashes the key: l in
// DI, the hash in AX; it jumps to long when the key is longer than HASH
// takes. Plain x86-64, so it runs on every amd64 CPU.
#define KEY(long) \
	MOVQ l+0(FP), DI          \
	MOVQ p+8(FP), SI          \
	MOVQ n+16(FP), R11        \
	HASH(long)

// BLOCK finds the block of the hash in AX as core.blockOf does: it
// leaves the filter's first block in AX and the block's byte offset from
// it in DX, so that a read can address it with no add, and the residue in
// BX.
#define BLOCK \
	MOVL AX, BX                \
	MULQ core_nblocks(DI)    \
	SHLQ $6, DX                \
	MOVQ core_blocks(DI), AX

// VECBLOCK loads the vector probe at field of the core in DI into CX
// and, when there is one, loads LANEBITS and does BLOCK; when there is
// none it jumps to none with the hash still in AX.
#define VECBLOCK(field, none) \
	MOVQ field(DI), CX \
	TESTQ CX, CX       \
	JZ   none          \
	LANEBITS           \
	BLOCK

// KEYBLOCK is KEY, then VECBLOCK for a vector probe of one half (vec8):
// the block at (AX)(DX*1), the residue in BX, the probe in CX. Without
// one it jumps to wide, where WIDE does the same for a probe of two halves
// (vec) or jumps to scalar where the core has no vector probe; for a
// long key, to long.
#define KEYBLOCK(long, wide) \
	KEY(long)                       \
	VECBLOCK(core_vec8, wide)

#define WIDE(scalar) VECBLOCK(core_vec, scalar)

// func keyHash(l *core, p *byte, n int) (h uint64, ok bool)
//
// HASH alone, for the tests that hold it to XXH3.
TEXT ·keyHash(SB), NOSPLIT|NOFRAME, $0-33
	MOVQ l+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), R11
	HASH(key_hash_long)
	MOVQ AX, h+24(FP)
	MOVB $1, ok+32(FP)
	RET

key_hash_long:
	MOVQ $0, h+24(FP)
	MOVB $0, ok+32(FP)
	RET

	HASH_OUT(key_hash_long)

// func keyHashes(l *core, keys unsafe.Pointer, stride uintptr, hs []uint64) int
//
// HASH of one key after another into hs, for the batched calls: key i's
// pointer and length are the first two words at keys + i·stride (a
// []byte's or a string's header). It stops at the first key longer than
// HASH takes and returns how many it hashed.
TEXT ·keyHashes(SB), NOSPLIT|NOFRAME, $0-56
	MOVQ  l+0(FP), DI
	MOVQ  keys+8(FP), R8
	MOVQ  stride+16(FP), BX
	MOVQ  hs_base+24(FP), R13
	MOVQ  hs_len+32(FP), R12
	TESTQ R12, R12
	JZ    key_hashes_done
	PCALIGN $32

key_hashes_loop:
	MOVQ 0(R8), SI
	MOVQ 8(R8), R11
	HASH(key_hashes_done)
	MOVQ AX, (R13)
	ADDQ $8, R13
	ADDQ BX, R8
	DECQ R12
	JNZ  key_hashes_loop

key_hashes_done:
	MOVQ hs_len+32(FP), AX
	SUBQ R12, AX
	MOVQ AX, ret+48(FP)
	RET

	HASH_OUT(key_hashes_done)

// func keyTest(l *core, p *byte, n int) bool
//
// Filter.Test of the n bytes at p: HASH, then vecTest's probe. Where the
// core has no vector probe, testHash probes the hash; for a long key,
// testKey does it all. Both take their arguments where keyTest has them,
// so keyTest jumps to them and they return to its caller: no call level
// more than Test had before it was assembly (and no AVX-512 instruction
// runs on a CPU without it).
TEXT ·keyTest(SB), NOSPLIT|NOFRAME, $0-25
	KEYBLOCK(key_test_long, key_test_wide)
	VMOVDQU64 (AX)(DX*1), Z0
	PROBE8
	SETCS    ret+24(FP)
	VZEROUPPER
	RET

key_test_wide:
	WIDE(key_test_scalar)
	VMOVDQU64 (AX)(DX*1), Z0
	PROBE16
	SETCS    ret+24(FP)
	VZEROUPPER
	RET

key_test_scalar:
	MOVQ AX, p+8(FP) // testHash(l, h, _)
	JMP  ·testHash(SB)

key_test_long:
	JMP ·testKey(SB)

	HASH_OUT(key_test_long)

// func keyAdd(l *core, p *byte, n int)
//
// Filter.Add of the n bytes at p: HASH, then vecAdd's test and write;
// addHash and addKey are its ways out, as keyTest's.
TEXT ·keyAdd(SB), NOSPLIT|NOFRAME, $0-24
	KEYBLOCK(key_add_long, key_add_wide)
	ADDQ      DX, AX
	VMOVDQU64 (AX), Z0
	PROBE8

key_add_tested:
	JCS      key_add_done // all set already
	MASK(Z8, key_mask_round)
	VPORQ     Z0, Z8, Z8
	VMOVDQU64 Z8, (AX)

key_add_done:
	VZEROUPPER
	RET

key_add_wide:
	WIDE(key_add_scalar)
	ADDQ      DX, AX
	VMOVDQU64 (AX), Z0
	PROBE16
	JMP key_add_tested

key_add_scalar:
	MOVQ AX, p+8(FP) // addHash(l, h, _)
	JMP  ·addHash(SB)

key_add_long:
	JMP ·addKey(SB)

	HASH_OUT(key_add_long)

// func keyAtomicAdd(l *core, p *byte, n int)
//
// AtomicFilter.Add of the n bytes at p: HASH, then vecAtomicAdd's test and
// locked ORs. Its ways out are keyAdd's: atomicAddHash for a core with
// no vector probe, atomicAddKey for a long key. Every call level between
// a loop and the locked ORs costs more here than in keyAdd: a frame's
// loads on the way out wait for the fences.
TEXT ·keyAtomicAdd(SB), NOSPLIT|NOFRAME, $0-24
	KEYBLOCK(key_atomic_long, key_atomic_wide)
	ADDQ      DX, AX
	VMOVDQU64 (AX), Z0
	PROBE8

key_atomic_tested:
	JCS key_atomic_done
	MASK(Z8, key_mask_round2)
	TXOR(key_atomic_done, key_atomic_locked)
	ATOMICOR(key_atomic_word)

key_atomic_done:
	VZEROUPPER
	RET

key_atomic_wide:
	WIDE(key_atomic_scalar)
	ADDQ      DX, AX
	VMOVDQU64 (AX), Z0
	PROBE16
	JMP key_atomic_tested

key_atomic_scalar:
	MOVQ AX, p+8(FP) // atomicAddHash(l, h, _)
	JMP  ·atomicAddHash(SB)

key_atomic_long:
	JMP ·atomicAddKey(SB)

	HASH_OUT(key_atomic_long)

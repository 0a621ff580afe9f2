//go:build !purego

#include "textflag.h"
#include "go_asm.h"
#include "probe_amd64.h"

// The single-key calls (Filter's Test, TestString, Add and AddString,
// AtomicFilter's Add and AddString) hash the key here too, in the same
// call as the probe: a Go hash, a Go frame and a second call around the
// probe cost Test a good part of its time, where the whole call is a few
// dozen instructions beside the limit's (docs/design.md, "The single-key
// calls"). HASH is XXH3-64 with a seed, as github.com/zeebo/xxh3's
// HashSeed computes it, for keys of up to 128 bytes
// (TestKeyHashMatchesXXH3, FuzzKeyHash); longer keys go to the Go hash,
// where the hashing outweighs a call.

// XXH3's avalanche multiplier, for IMULQ from memory: one instruction
// where a constant would need a register loaded first.
DATA ·avalanchePrime+0(SB)/8, $0x165667919e3779f9
GLOBL ·avalanchePrime(SB), RODATA|NOPTR, $8

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
// places after its last RET. (A misaligned 17-32-byte path measured
// slower: docs/design.md, "The single-key calls".)
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

// func keyHashes(l *core, keys *keyHeader, stride uintptr, hs []uint64) int
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
// Filter.Test of the n bytes at p: HASH, then probeTest's vector probe.
// Where the core has no vector probe, testHash probes the hash; for a long
// key, testKey does it all. Both take their arguments where keyTest has them,
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
// Filter.Add of the n bytes at p: HASH, then probeTestAndAdd's test and
// write; addHash and addKey are its ways out, as keyTest's.
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
// AtomicFilter.Add of the n bytes at p: HASH, then probeAtomicAdd's test
// and locked ORs. Its ways out are keyAdd's: atomicAddHash for a core with
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

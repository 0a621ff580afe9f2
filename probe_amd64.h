// The vector probe's macros, shared by probe_amd64.s (the probes of
// blocks and of windows of hashes) and keyhash_amd64.s (the single-key
// calls, which hash and probe in one routine). Include go_asm.h first.

// Every routine that touches a 512-bit register ends with VZEROUPPER:
// without it, the SSE code that Go runs between calls pays for the dirty
// upper halves, many times over on some Intel CPUs (docs/design.md, "The
// vector probe").

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
// (see probe_amd64.go). VPMADD52LUQ leaves magic·x mod 2^52, the fraction
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

// VEC loads into CX the vector probe of the core at l+0(FP) and jumps to
// scalar when it has none.
#define VEC(scalar) \
	MOVQ  l+0(FP), CX      \
	MOVQ  core_vec(CX), CX \
	TESTQ CX, CX           \
	JZ    scalar

// TESTED loads LANEBITS, the block b+8(FP) into Z0 (first: on a large
// filter it is a cache miss, which should start before the arithmetic
// rather than wait for the word numbers) with its address in AX, the
// residue x+16(FP) in BX, and tests it against the vector probe in CX:
// PROBE, which leaves CF set when every bit of the key is.
#define TESTED(tested) \
	LANEBITS                \
	MOVQ      b+8(FP), AX  \
	MOVL      x+16(FP), BX \
	VMOVDQU64 (AX), Z0     \
	PROBE(tested)

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

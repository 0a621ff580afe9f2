//go:build !purego

package ohbloom

// What this CPU offers the assembly, asked once at start: AVX-512 without
// a clock penalty, for the vector probe (probe_amd64.go), and Intel TSX
// RTM, for setting a new key's bits in one transaction.

import "os"

// cpuid and xgetbv are the instructions (cpu_amd64.s).
func cpuid(leaf, sub uint32) (a, b, c, d uint32)
func xgetbv() (a, d uint32)

// hasVector reports whether this CPU and OS run the vector probe well.
var hasVector = detectVector()

// useRTM reports whether AtomicFilter's vector code sets a new key's bits
// in one hardware transaction (TXOR in probe_amd64.h) rather than one
// locked OR per word: the CPU has Intel TSX RTM and does not abort every
// transaction (RTM_ALWAYS_ABORT, which microcode sets where TSX is
// withdrawn), and OHBLOOM_RTM is not "off".
var useRTM = hasVector && detectRTM() && os.Getenv("OHBLOOM_RTM") != "off"

// detectRTM reports whether the CPU has RTM and does not abort every
// transaction.
func detectRTM() bool {
	_, b7, _, d7 := cpuid(7, 0)
	return b7&(1<<11) != 0 && d7&(1<<11) == 0
}

// detectVector reports whether the CPU and the OS run the vector probe
// well: AVX-512 F, DQ, BW, BITALG and IFMA, the OS saving their state, on
// a CPU that keeps its clock running them.
func detectVector() bool {
	maxLeaf, vb, vc, vd := cpuid(0, 0)
	amd := vb == 0x68747541 && vd == 0x69746e65 && vc == 0x444d4163   // "AuthenticAMD"
	intel := vb == 0x756e6547 && vd == 0x49656e69 && vc == 0x6c65746e // "GenuineIntel"
	if maxLeaf < 7 || !(amd || intel) {
		return false
	}
	_, _, c1, _ := cpuid(1, 0)
	if c1&(1<<27) == 0 { // OSXSAVE: XGETBV is there to ask
		return false
	}
	// The OS must save the AVX-512 state: XMM, YMM, opmask, ZMM0-15 upper
	// halves, ZMM16-31.
	if xcr0, _ := xgetbv(); xcr0&0xe6 != 0xe6 {
		return false
	}
	_, b7, c7, _ := cpuid(7, 0)
	// F; DQ for KMOVB; BW for the 64-bit mask instructions (KMOVQ,
	// KTESTQ, KANDQ) that hold VPSHUFBITQMB's results.
	const f, dq, bw = 1 << 16, 1 << 17, 1 << 30
	if b7&(f|dq|bw) != f|dq|bw {
		return false
	}
	if c7&(1<<12) == 0 { // AVX512_BITALG, for VPSHUFBITQMB
		return false
	}
	if b7&(1<<21) == 0 { // AVX512_IFMA, for BITS's VPMADD52LUQ and VPMADD52HUQ
		return false
	}
	if intel {
		// Ice Lake and later, the first with no 512-bit frequency
		// penalty, are the first with VBMI2 (CPUID.7.0:ECX bit 6).
		return c7&(1<<6) != 0
	}
	return true // AMD's first AVX-512 is Zen 4, which keeps its clock
}

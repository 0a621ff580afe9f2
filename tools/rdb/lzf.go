package rdb

import (
	"errors"
	"sync"
)

// Redis compresses strings of more than 20 bytes with liblzf 3.6
// (src/lzf_c.c, lzf_d.c, lzfP.h), built with HLOG 16 and VERY_FAST. To give
// back the bytes Redis itself writes, lzfCompress is that code, step for
// step: the same hash, the same match search, the same output. Redis's hash
// table is left uninitialised (INIT_HTAB 0), so in principle a stale entry
// from an earlier call could steer a match; here the table starts empty,
// which is what the golden payloads, compared byte for byte in the tests,
// were made with.

const (
	lzfHLog   = 16
	lzfHSize  = 1 << lzfHLog
	lzfMaxLit = 1 << 5
	lzfMaxOff = 1 << 13
	lzfMaxRef = 1<<8 + 1<<3

	// lzfMaxRatio bounds what one compressed byte can give: a back
	// reference of 3 bytes copies at most 264.
	lzfMaxRatio = 88
)

var lzfTables = sync.Pool{New: func() any { return new([lzfHSize]int32) }}

func lzfIdx(h uint32) uint32 { return (h>>(3*8-lzfHLog) - h*5) & (lzfHSize - 1) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lzfCompress compresses in into out[:outLen] as lzf_compress(in, len(in),
// out, outLen) does and returns the compressed length, or 0 if it does not
// fit. out must have room for outLen+1 bytes, as Redis allocates.
func lzfCompress(in, out []byte, outLen int) int {
	inLen := len(in)
	if inLen < 2 || outLen == 0 {
		return 0
	}
	htab := lzfTables.Get().(*[lzfHSize]int32)
	defer lzfTables.Put(htab)
	clear(htab[:])
	// htab holds a position plus one: 0 is liblzf's NULL.

	ip, op, lit := 0, 1, 0 // op 1: the first literal run's length byte
	hval := uint32(in[0])<<8 | uint32(in[1])
	for ip < inLen-2 {
		hval = hval<<8 | uint32(in[ip+2])
		slot := &htab[lzfIdx(hval)]
		ref := int(*slot) - 1
		*slot = int32(ip + 1)
		off := ip - ref - 1
		if ref > 0 && off < lzfMaxOff &&
			in[ref+2] == in[ip+2] && in[ref] == in[ip] && in[ref+1] == in[ip+1] {
			n := 2
			maxlen := inLen - ip - n
			if maxlen > lzfMaxRef {
				maxlen = lzfMaxRef
			}
			if op+3+1 >= outLen && op-b2i(lit == 0)+3+1 >= outLen {
				return 0
			}
			out[op-lit-1] = byte(lit - 1)
			op -= b2i(lit == 0)
		match:
			for {
				if maxlen > 16 {
					for range 16 {
						n++
						if in[ref+n] != in[ip+n] {
							break match
						}
					}
				}
				for {
					n++
					if !(n < maxlen && in[ref+n] == in[ip+n]) {
						break
					}
				}
				break
			}
			n -= 2 // the match is n+2 bytes
			ip++
			if n < 7 {
				out[op] = byte(off>>8 + n<<5)
				op++
			} else {
				out[op] = byte(off>>8 + 7<<5)
				out[op+1] = byte(n - 7)
				op += 2
			}
			out[op] = byte(off)
			op++
			lit = 0
			op++
			ip += n + 1
			if ip >= inLen-2 {
				break
			}
			// VERY_FAST: hash the match's last two positions only.
			ip -= 2
			hval = uint32(in[ip])<<8 | uint32(in[ip+1])
			hval = hval<<8 | uint32(in[ip+2])
			htab[lzfIdx(hval)] = int32(ip + 1)
			ip++
			hval = hval<<8 | uint32(in[ip+2])
			htab[lzfIdx(hval)] = int32(ip + 1)
			ip++
		} else {
			if op >= outLen {
				return 0
			}
			lit++
			out[op] = in[ip]
			op++
			ip++
			if lit == lzfMaxLit {
				out[op-lit-1] = byte(lit - 1)
				lit = 0
				op++
			}
		}
	}
	if op+3 > outLen {
		return 0
	}
	for ip < inLen {
		lit++
		out[op] = in[ip]
		op++
		ip++
		if lit == lzfMaxLit {
			out[op-lit-1] = byte(lit - 1)
			lit = 0
			op++
		}
	}
	out[op-lit-1] = byte(lit - 1)
	op -= b2i(lit == 0)
	return op
}

var errLZF = errors.New("invalid LZF data")

// lzfDecompress expands in, which must give exactly n bytes, as Redis
// requires of lzf_decompress. The output grows as bytes are produced, never
// to more than the compressed bytes can give, so a length that merely
// claims much allocates little.
func lzfDecompress(in []byte, n uint64) ([]byte, error) {
	if n > uint64(len(in))*lzfMaxRatio {
		return nil, errLZF
	}
	out := make([]byte, 0, min(n, uint64(len(in))*4+64))
	for ip := 0; ip < len(in); {
		ctrl := int(in[ip])
		ip++
		if ctrl < 1<<5 { // literal run of ctrl+1 bytes
			ctrl++
			if uint64(len(out)+ctrl) > n || ip+ctrl > len(in) {
				return nil, errLZF
			}
			out = append(out, in[ip:ip+ctrl]...)
			ip += ctrl
			continue
		}
		length := ctrl >> 5
		ref := len(out) - (ctrl&0x1f)<<8 - 1
		if ip >= len(in) {
			return nil, errLZF
		}
		if length == 7 {
			length += int(in[ip])
			ip++
			if ip >= len(in) {
				return nil, errLZF
			}
		}
		ref -= int(in[ip])
		ip++
		length += 2
		if uint64(len(out)+length) > n || ref < 0 {
			return nil, errLZF
		}
		if ref+length <= len(out) {
			out = append(out, out[ref:ref+length]...)
		} else { // the copy overlaps what it writes: byte by byte
			for i := range length {
				out = append(out, out[ref+i])
			}
		}
	}
	if uint64(len(out)) != n {
		return nil, errLZF
	}
	return out, nil
}

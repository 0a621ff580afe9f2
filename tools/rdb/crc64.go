package rdb

import "encoding/binary"

// Redis checksums RDB files and DUMP payloads with CRC-64/Jones
// (src/crc64.c): polynomial 0xad93d23594c935a9, reflected, initial value 0,
// no final xor; "123456789" sums to 0xe9c6d914c4b8d9ca. hash/crc64 can hold
// the polynomial but inverts the state before and after each update and
// builds a 16 KiB slicing table on every call of 2 KiB or more for a
// polynomial other than ISO's and ECMA's, so the table is kept here, once.

// crcPoly is 0xad93d23594c935a9 bit-reversed, for the reflected algorithm.
const crcPoly = 0x95ac9329ac4bc9b5

var crcTable = func() (t [8][256]uint64) {
	for i := range 256 {
		c := uint64(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ crcPoly
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	for i := range 256 {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][c&0xff] ^ c>>8
			t[k][i] = c
		}
	}
	return t
}()

// crc64 continues Redis's CRC-64 crc over p (crc64(crc, p, len(p)) in
// Redis). The checksum of a whole input is crc64(0, input).
func crc64(crc uint64, p []byte) uint64 {
	t := &crcTable
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint64(p)
		crc = t[7][crc&0xff] ^ t[6][crc>>8&0xff] ^ t[5][crc>>16&0xff] ^ t[4][crc>>24&0xff] ^
			t[3][crc>>32&0xff] ^ t[2][crc>>40&0xff] ^ t[1][crc>>48&0xff] ^ t[0][crc>>56]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return crc
}

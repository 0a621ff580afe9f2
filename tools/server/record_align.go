package server

// The alignment of a record's blocks (record version 4, store.go): every
// block array of a key's filter starts 64-byte aligned from the record's
// start, so that a start can map a data file and serve the filter from
// the mapping (restore.go). The record's header is padded with zeros to a
// multiple of 64; the encoding of a fixed or counting filter then has its
// blocks 128 bytes in, aligned; a scalable filter's encoding does not
// (its stages follow its own header, schedule and counts, and each
// other's 8-byte checksums), so zeros are inserted before each stage, up
// to the next multiple of 64. The padding is the record's, not the
// filter's: the writer inserts it as the encoding passes, and the reader
// removes it, so that the library's decoder sees its own format and
// checks it whole.

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

const (
	filterHeader = 128  // ohbloom's encoded header
	maxStages    = 1024 // what ohbloom's decoder accepts
)

// pad is how many zero bytes take off to the next multiple of 64.
func pad(off uint64) uint64 { return -off & 63 }

// stageLayout follows a scalable filter's encoding as it passes, to tell
// where each stage starts. It reads only the fields that place the
// stages (the stage count and version of the filter's header, the block
// count of each stage's): the decoder checks everything. On a header it
// cannot follow it stops inserting, and the decoder finds the fault.
type stageLayout struct {
	pos   uint64 // bytes of the encoding so far
	next  uint64 // where the next stage starts (math.MaxUint64: none)
	left  uint64 // stages not started yet
	hdr   [filterHeader]byte
	hdrAt uint64 // where the header being read starts (the filter's, then each stage's)
	inHdr bool
	outer bool // the header being read is the filter's
}

func newStageLayout() *stageLayout {
	return &stageLayout{next: math.MaxUint64, inHdr: true, outer: true}
}

// until is how many bytes may pass before the next stage starts.
func (l *stageLayout) until() uint64 {
	if l.next == math.MaxUint64 {
		return math.MaxUint64
	}
	return l.next - l.pos
}

// atStage reports whether a stage starts here; startStage then moves in.
func (l *stageLayout) atStage() bool { return l.pos == l.next && l.left > 0 }

func (l *stageLayout) startStage() {
	l.left--
	l.next = math.MaxUint64
	l.hdrAt, l.inHdr, l.outer = l.pos, true, false
}

// pass records b, which must not run past until().
func (l *stageLayout) pass(b []byte) {
	if l.inHdr {
		at := l.pos - l.hdrAt
		n := copy(l.hdr[at:], b)
		if at+uint64(n) == filterHeader {
			l.inHdr = false
			l.headerDone()
		}
	}
	l.pos += uint64(len(b))
}

func (l *stageLayout) headerDone() {
	le := binary.LittleEndian
	if l.outer {
		stages := le.Uint64(l.hdr[24:])
		if stages == 0 || stages > maxStages {
			return
		}
		meta := uint64(filterHeader)
		if le.Uint16(l.hdr[8:]) == 2 {
			meta += 64 + 8*stages // the schedule and the counts
		}
		l.left, l.next = stages, l.hdrAt+meta
		return
	}
	blocks := le.Uint64(l.hdr[24:])
	if blocks == 0 || blocks > 1<<32 || l.left == 0 {
		l.left = 0
		return
	}
	l.next = l.hdrAt + filterHeader + 64*blocks + 8
}

// stagePadder writes a scalable filter's encoding with the zeros before
// each stage. off is where the encoding starts, from the record's start.
type stagePadder struct {
	w      io.Writer
	off    uint64 // bytes written, from the record's start
	layout *stageLayout
}

var zeros [64]byte

func (p *stagePadder) Write(b []byte) (int, error) {
	done := 0
	for len(b) > 0 {
		if p.layout.atStage() {
			if n := pad(p.off); n > 0 {
				if _, err := p.w.Write(zeros[:n]); err != nil {
					return done, err
				}
				p.off += n
			}
			p.layout.startStage()
		}
		n := int(min(uint64(len(b)), p.layout.until()))
		m, err := p.w.Write(b[:n])
		p.layout.pass(b[:m])
		p.off += uint64(m)
		done += m
		if err != nil {
			return done, err
		}
		b = b[n:]
	}
	return done, nil
}

// stageUnpadder reads what stagePadder wrote, without the zeros, which
// it checks. Len and InPlace pass through to the reader under it.
type stageUnpadder struct {
	r      io.Reader
	off    uint64 // bytes read, from the record's start
	layout *stageLayout
}

func (u *stageUnpadder) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if u.layout.atStage() {
		if n := pad(u.off); n > 0 {
			var z [64]byte
			if _, err := io.ReadFull(u.r, z[:n]); err != nil {
				return 0, io.ErrUnexpectedEOF
			}
			if z != ([64]byte{}) {
				return 0, fmt.Errorf("%w: the padding before a stage is not zero", errCorrupt)
			}
			u.off += n
		}
		u.layout.startStage()
	}
	n := int(min(uint64(len(b)), u.layout.until()))
	m, err := u.r.Read(b[:n])
	u.layout.pass(b[:m])
	u.off += uint64(m)
	return m, err
}

// Len is what the reader under it holds, the padding included: the
// decoder takes it as a size hint only.
func (u *stageUnpadder) Len() int {
	if l, ok := u.r.(interface{ Len() int }); ok {
		return l.Len()
	}
	return 0
}

// InPlace lends the memory of a stage's blocks, asked for at its
// header's end, where the reader under it lends it.
func (u *stageUnpadder) InPlace(n int) []byte {
	ip, ok := u.r.(interface{ InPlace(int) []byte })
	if !ok || u.layout.inHdr || u.layout.atStage() || uint64(n) > u.layout.until() {
		return nil
	}
	return ip.InPlace(n)
}

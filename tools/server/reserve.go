package server

// Disk space reserved for the log, so that a full disk cannot make an
// acknowledged change go missing.
//
// Under everysec and no, a change is acknowledged while its record waits
// in the log's buffer, written within a second. If that write then fails
// for lack of space, the change is still in memory only: kill -9 before
// the disk has room again loses it, however long ago it was acknowledged.
// So the log reserves blocks ahead of where it writes, in the segment
// itself (fallocate with FALLOC_FL_KEEP_SIZE: the blocks are allocated,
// the file's size does not change, and the reader sees the file as it
// was), and acknowledges a change at once only if every record not yet
// written fits in what is reserved. Writing into blocks already allocated
// cannot fail for lack of space (on file systems that write them in place:
// ext4, xfs, tmpfs; not on copy-on-write ones such as btrfs with
// snapshots, or ZFS).
//
// The flusher keeps about reserveStep reserved ahead of the log's end,
// extending it once less than half is left: one fallocate per
// reserveStep/2 bytes logged. When the disk cannot give the next step,
// it takes what it can (halving down to minGrow), and once less than
// reserveKeep is left the log refuses changes with MISCONF, before they
// are made: everything acknowledged before fits, and is written. DEL and
// FLUSHALL still run, their records in the reserveKeep kept back for
// them, and their replies wait until their records are written and
// fsynced, as when a write fails. A change that passed the check while
// another took the last reserved bytes is not acknowledged before its
// record is written and fsynced (an error if that write fails). The
// flusher tries to extend the reservation every second, and changes are
// taken again once it has.
//
// A rotation reserves the new segment before records go to it; until the
// manifest has recorded the move, a record must fit in both segments'
// reservations (if the move fails, the records go to the old segment).
// Once it is recorded, the old segment is truncated to its end, which
// drops the blocks reserved past it (ext4, xfs and tmpfs free blocks past
// the end on a truncate, even to the same size), and so does a clean
// close. kill -9 leaves them; the next start reserves from the end
// again, reusing them.
//
// A file system without fallocate (EOPNOTSUPP), and systems other than
// Linux, reserve nothing: the start logs it once, and a full disk there
// loses, on kill -9 while it is full, the acknowledged records that the
// failed write could not write (under everysec about the second before
// the error).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
)

var (
	// reserveStep is how much the log keeps reserved ahead of its end:
	// at least maxBuffered, what the buffer may hold before writers wait.
	// Tests make it smaller.
	reserveStep int64 = max(64<<20, maxBuffered)
	// reserveKeep is kept back for DEL and FLUSHALL: changes are refused
	// once less is left and the reservation cannot grow. A DEL's record
	// is at most 65,563 bytes (the longest key): 16 of them, and many
	// more with short keys.
	reserveKeep int64 = 1 << 20
	// minGrow is the smallest extension tried when a step does not fit.
	minGrow int64 = 64 << 10
)

// errNoReserve says that the file system, or the system, cannot reserve
// space for a file without changing its size.
var errNoReserve = errors.New("the file system cannot reserve space (fallocate with FALLOC_FL_KEEP_SIZE)")

// diskHook, set by tests through testDisk, stands for the disk under the
// data directory.
type diskHook struct {
	// fit is asked before each write that grows a file how many of its
	// n bytes fit; the write fails after those with its error, as on a
	// full disk.
	fit func(path string, n int) (int, error)
	// reserve, if set, stands for fallocate with FALLOC_FL_KEEP_SIZE up
	// to end (errNoReserve: a file system without it).
	reserve func(path string, end int64) error
	// release is told that a file's blocks past its end are dropped.
	release func(path string)
}

var testDisk atomic.Pointer[diskHook]

// reserveRange reserves f's blocks in [off, off+n) without changing its
// size.
func reserveRange(f *os.File, off, n int64) error {
	if d := testDisk.Load(); d != nil && d.reserve != nil {
		if err := d.reserve(f.Name(), off+n); errors.Is(err, errNoReserve) {
			return err
		} else if err != nil {
			return &fs.PathError{Op: "fallocate", Path: f.Name(), Err: err}
		}
		return nil
	}
	return fallocateKeepSize(f, off, n)
}

// growReserve reserves f's blocks from `from` up to `to`, or, when the
// disk has less room, as far towards it as it has, halving the step down
// to minGrow. It returns the end reserved and, if that is short of to,
// the first failure.
func growReserve(f *os.File, from, to int64) (int64, error) {
	var first error
	for n := to - from; n > 0; n /= 2 {
		err := reserveRange(f, from, n)
		if err == nil {
			return from + n, first
		}
		if first == nil {
			first = err
		}
		if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) || n < 2*minGrow {
			break
		}
	}
	return from, first
}

// releaseReserve cuts f to size, which drops the blocks reserved past it.
func releaseReserve(f *os.File, size int64) error {
	if d := testDisk.Load(); d != nil && d.release != nil {
		d.release(f.Name())
	}
	return f.Truncate(size)
}

// refitLocked moves fitPos to the end of the log if every record not yet
// written fits in the reservation, and sets short, after the buffer (of
// buffered bytes), the reservation or the segment changed.
func (l *appendLog) refitLocked(buffered int64) {
	if !l.reserveOn {
		return
	}
	pending := buffered - l.skip
	need, res, growErr := l.base+pending, l.resEnd, l.growErr
	fits := need <= res
	if o := l.old; o != nil {
		// A rotation: changes are refused only for lack of room in the
		// old segment; the new one tries again once the old one gives
		// back its blocks.
		need, res, growErr = o.base+pending, o.resEnd, o.growErr
		fits = fits && need <= res
	}
	if fits {
		l.fitPos.Store(l.appended)
	}
	short := growErr != nil && need+reserveKeep > res
	if short == l.shortNow {
		return
	}
	l.shortNow = short
	l.short.Store(short)
	if short {
		l.logger.Error("the append-only log cannot reserve disk space for more changes: they are refused (MISCONF) until it can, tried every second; every change acknowledged fits in the space reserved, and DEL and FLUSHALL still work", "segment", segmentPath(l.dir, l.gen), "err", growErr)
	} else {
		l.logger.Info("the append-only log has disk space reserved again: changes are taken", "segment", segmentPath(l.dir, l.gen))
	}
}

// growWantedLocked says whether the flush token's holder is to extend the
// reservation, and from where to where: when less than half a step is
// left past what the buffer holds. retry says it may try although the
// last try fell short (the flusher's second).
func (l *appendLog) growWantedLocked(retry bool) (from, to int64) {
	if !l.reserveOn || l.sticky || l.growErr != nil && !retry {
		return 0, 0
	}
	need := l.base + l.bufferedLocked() - l.skip
	if l.resEnd-need >= reserveStep/2 {
		return 0, 0
	}
	return max(l.resEnd, l.size), need + reserveStep
}

// grownLocked records what growReserve did.
func (l *appendLog) grownLocked(end int64, err error) {
	l.resEnd = max(l.resEnd, end)
	l.growErr = err
}

// refusing says whether changes are refused: the log is failing, or has
// no space reserved for them.
func (l *appendLog) refusing() bool { return l.failed.Load() || l.short.Load() }

// refusal is the reply to a change while the log refuses them, or "" if
// it no longer does.
func (l *appendLog) refusal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.err != nil:
		return "MISCONF Errors writing to the append-only log: " + oneLine(l.err.Error()) +
			". Changes are refused until it can be written again (tried every second) or a save succeeds; DEL and FLUSHALL still work."
	case l.shortNow:
		return "MISCONF Errors writing to the append-only log: no disk space can be reserved for more changes: " + oneLine(l.growErr.Error()) +
			". Changes are refused until it can (tried every second); every change acknowledged is kept; DEL and FLUSHALL still work."
	}
	return ""
}

// infoSpace writes INFO's lines on what waits to be written and the space
// reserved for it (-1: none can be).
func (l *appendLog) infoSpace(b *strings.Builder) {
	l.mu.Lock()
	pending := l.appended - l.written
	reserved := int64(-1)
	if l.reserveOn {
		reserved = max(l.resEnd-(l.base+l.bufferedLocked()-l.skip), 0)
	}
	l.mu.Unlock()
	fmt.Fprintf(b, "aof_buffer_length:%d\r\naof_space_reserved:%d\r\n", pending, reserved)
}

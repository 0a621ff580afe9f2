package server

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// diskUse returns a file's size and the bytes of disk it holds: its
// blocks, and its extent tree's (slack is the most those add beyond the
// data's blocks here).
func diskUse(t *testing.T, path string) (size, disk int64) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size(), info.Sys().(*syscall.Stat_t).Blocks * 512
}

const slack = 16 << 10

// On the file system under the test's temporary directory (skipped if it
// cannot reserve): the live segment holds reserveStep of blocks past its
// end from the start, the flusher extends them once half is used, a
// rotation reserves the new segment and gives back what the old one held
// past its end, and so does a shutdown; the segment's size, what a reader
// reads, is only what was written.
func TestLogReservesSpace(t *testing.T) {
	ctx := context.Background()
	smallReserve(t)
	dir := t.TempDir()
	s, rdb := startOn(t, dir, Config{AppendFsync: "everysec"})
	l := s.store.log
	if !l.reserveOn {
		t.Skip("the file system under the temporary directory cannot reserve space")
	}
	reserved := func(path string) int64 {
		t.Helper()
		size, disk := diskUse(t, path)
		if size != fileSize(path) {
			t.Fatal("size changed")
		}
		return disk - size
	}
	seg := segmentPath(dir, l.currentGen())
	if size, _ := diskUse(t, seg); size != segmentHeader {
		t.Fatalf("a new segment of %d bytes", size)
	}
	if r := reserved(seg); r < reserveStep-segmentHeader {
		t.Fatalf("%d bytes reserved past the new segment's end, want %d", r, reserveStep)
	}
	// More than half a step of records: the flusher's next write
	// extends the reservation.
	for i := 0; fileSize(seg) < reserveStep; i++ {
		if err := rdb.BFMAdd(ctx, "k", numbered(fmt.Sprintf("b%d-", i), 64)...).Err(); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			l.flush(true)
		}
	}
	l.flush(true)
	if r := reserved(seg); r < reserveStep/2 {
		t.Fatalf("%d bytes reserved past a segment of %d bytes, want at least %d", r, fileSize(seg), reserveStep/2)
	}
	var old, next int64 = -1, -1
	saveHook = func(step string) {
		if step == "rotated" {
			old, next = reserved(seg), reserved(segmentPath(dir, l.currentGen()))
		}
	}
	defer func() { saveHook = nil }()
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	saveHook = nil
	if old > slack || next < reserveStep-segmentHeader {
		t.Fatalf("after a rotation %d bytes reserved past the old segment's end, %d past the new one's; want none and %d", old, next, reserveStep)
	}
	if err := s.Shutdown(ctx); err != nil { // which saves: a rotation
		t.Fatal(err)
	}
	seg = segmentPath(dir, l.currentGen())
	if r := reserved(seg); r > slack {
		t.Fatalf("%d bytes reserved past the segment's end after a shutdown", r)
	}
}

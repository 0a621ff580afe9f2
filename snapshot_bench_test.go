package ohbloom

import (
	"path/filepath"
	"testing"

	"github.com/ohbloom/ohbloom/internal/testkeys"
)

// BenchmarkSnapshot compares, for a 1.25 GB filter (10^9 keys at 1%), the
// ways a process can get its filter at start-up: Open (map the snapshot and
// check its checksum), OpenUnverified (map it, check the header only),
// Load (read and decode it), and rebuilding it from the keys with AddSeq.
// The file is in the page cache, as it is after Save.
//
//	go test -run '^$' -bench Snapshot -benchtime 3x -timeout 1h .
func BenchmarkSnapshot(b *testing.B) {
	const n = 1_000_000_000
	path := filepath.Join(b.TempDir(), "big.ohbloom")
	keys := func(yield func([]byte) bool) {
		var buf [16]byte
		for i := range uint64(n) {
			if !yield(testkeys.Key16(&buf, i)) {
				return
			}
		}
	}
	f := NewAtomic(n, 0.01)
	f.AddSeq(keys)
	if err := f.Save(path); err != nil {
		b.Fatal(err)
	}
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			s, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			var buf [16]byte
			if !s.Test(testkeys.Key16(&buf, 12345)) {
				b.Fatal("key not found")
			}
			s.Close()
		}
	})
	b.Run("open-unverified", func(b *testing.B) {
		for b.Loop() {
			s, err := OpenUnverified(path)
			if err != nil {
				b.Fatal(err)
			}
			var buf [16]byte
			if !s.Test(testkeys.Key16(&buf, 12345)) {
				b.Fatal("key not found")
			}
			s.Close()
		}
	})
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			if _, err := Load(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rebuild", func(b *testing.B) {
		for b.Loop() {
			NewAtomic(n, 0.01).AddSeq(keys)
		}
	})
}

// BenchmarkSnapshotChecked measures what the fault check of TestChecked and
// TestBatchChecked costs beside Test and TestBatch, on a snapshot of 10^6
// keys at 1% (1.2 MB, in the caches, where the check weighs most).
//
//	go test -run '^$' -bench SnapshotChecked -count 6 .
func BenchmarkSnapshotChecked(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "snap")
	f := New(n, 0.01)
	var buf [16]byte
	for i := range uint64(n) {
		f.Add(testkeys.Key16(&buf, i))
	}
	if err := f.Save(path); err != nil {
		b.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = testkeys.Key16(new([16]byte), uint64(i)*977) // all added
	}
	results := make([]bool, len(keys))
	perKey := func(b *testing.B, done int) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/key")
	}
	b.Run("op=Test", func(b *testing.B) {
		done := 0
		for b.Loop() {
			if !s.Test(keys[done&1023]) {
				b.Fatal("key not found")
			}
			done++
		}
		perKey(b, done)
	})
	b.Run("op=TestChecked", func(b *testing.B) {
		done := 0
		for b.Loop() {
			if ok, err := s.TestChecked(keys[done&1023]); !ok || err != nil {
				b.Fatal("key not found", err)
			}
			done++
		}
		perKey(b, done)
	})
	b.Run("op=TestBatch", func(b *testing.B) {
		done := 0
		for b.Loop() {
			s.TestBatch(keys, results)
			done += len(keys)
		}
		perKey(b, done)
	})
	b.Run("op=TestBatchChecked", func(b *testing.B) {
		done := 0
		for b.Loop() {
			if err := s.TestBatchChecked(keys, results); err != nil {
				b.Fatal(err)
			}
			done += len(keys)
		}
		perKey(b, done)
	})
}

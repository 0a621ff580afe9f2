package ohbloom

import (
	"path/filepath"
	"testing"
)

// BenchmarkSnapshot compares, for a 1.25 GB filter (10^9 keys at 1%), the
// three ways a process can get its filter at start-up: Open (map the
// snapshot), Load (read and decode it; the file is in the page cache, the
// kindest case for Load), and rebuilding it from the keys with AddSeq.
//
//	go test -run '^$' -bench Snapshot -benchtime 3x -timeout 1h .
func BenchmarkSnapshot(b *testing.B) {
	const n = 1_000_000_000
	path := filepath.Join(b.TempDir(), "big.ohbloom")
	keys := func(yield func([]byte) bool) {
		var buf [16]byte
		for i := range uint64(n) {
			if !yield(benchKey(&buf, i)) {
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
			if !s.Test(benchKey(&buf, 12345)) {
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

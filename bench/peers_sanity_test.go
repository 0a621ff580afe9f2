package bench

import "testing"

// TestPeersSanity checks the comparison harness itself: every library finds
// all its keys and keeps near its promised rate on the benchmark's keys, so
// the timings compare filters that work.
func TestPeersSanity(t *testing.T) {
	const n, p = 100_000, 0.01
	present, absent := NewKeys(n, 1), NewKeys(1<<18, 2)
	for _, peer := range peers {
		f, bits := peer.new(n, p)
		for i := range n {
			f.Add(present.At(i))
		}
		for i := range n {
			if !f.Test(present.At(i)) {
				t.Fatalf("%s: key %d not found", peer.name, i)
			}
		}
		fp := 0
		for i := range absent.Len() {
			if f.Test(absent.At(i)) {
				fp++
			}
		}
		rate := float64(fp) / float64(absent.Len())
		t.Logf("%s: fpr %.4f, %.2f bits/key", peer.name, rate, bits/n)
		// 2.6k expected false positives: ±10% is over five sigma.
		if rate > p*1.1 {
			t.Errorf("%s: fpr %.4f at p = %g", peer.name, rate, p)
		}
	}
}

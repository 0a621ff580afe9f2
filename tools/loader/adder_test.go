package loader

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ohbloom/ohbloom"
)

// Whichever way a load adds its keys (straight into the filter, or through
// a private copy ORed in at the end), the filter ends with exactly the bits
// of the same keys added one by one, beside keys the stream added meanwhile.
func TestKeyAdderSetsTheSameBits(t *testing.T) {
	for _, c := range []struct {
		keys      int
		maxMemory uint64
		private   bool
	}{
		{100, 0, false},          // fewer keys than blocks: no copy
		{50_000, 0, true},        // a copy
		{50_000, 1 << 10, false}, // a copy would not fit
	} {
		f := ohbloom.NewAtomic(40_000, 0.01)
		want := f.ToPlain()
		a := newKeyAdder(f, c.maxMemory)
		sawPrivate := false
		for i := range c.keys {
			key := fmt.Appendf(nil, "key-%d", i)
			a.add(key)
			want.Add(key)
			sawPrivate = sawPrivate || a.private != nil
			if i%1000 == 0 {
				stream := fmt.Appendf(nil, "stream-%d", i)
				f.Add(stream)
				want.Add(stream)
			}
		}
		a.finish()
		if sawPrivate != c.private {
			t.Errorf("%d keys, MaxMemory %d: private copy used %v, want %v", c.keys, c.maxMemory, sawPrivate, c.private)
		}
		got := f.AppendBlocks(nil, 0, f.Layout().Blocks())
		if !bytes.Equal(got, want.AppendBlocks(nil, 0, want.Layout().Blocks())) {
			t.Errorf("%d keys, MaxMemory %d: the filter's bits differ from the keys added one by one", c.keys, c.maxMemory)
		}
	}
}

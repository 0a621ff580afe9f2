package classic

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ohbloom/ohbloom"
)

// FuzzRead: both classic formats, never a panic; errors wrap
// sentinels; a success consumed exactly the filter's encoding, which it
// writes back identically.
func FuzzRead(f *testing.F) {
	for _, s := range []Strategy{BitsAndBlooms, Guava} {
		c, _ := NewWithEstimates(s, 100, 0.01)
		c.AddString("seed")
		data, _ := c.MarshalBinary()
		f.Add(byte(s), data)
		f.Add(byte(s), data[:len(data)-1])
	}
	f.Fuzz(func(t *testing.T, strategy byte, data []byte) {
		s := Strategy(strategy%2 + 1)
		c, n, err := Read(bytes.NewReader(data), s)
		if err != nil {
			if !errors.Is(err, ohbloom.ErrTruncated) && !errors.Is(err, ohbloom.ErrCorrupt) && !errors.Is(err, ErrUnknownStrategy) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		again, _ := c.MarshalBinary()
		if !bytes.Equal(again, data[:n]) {
			t.Fatal("a decoded classic filter re-encodes differently")
		}
	})
}

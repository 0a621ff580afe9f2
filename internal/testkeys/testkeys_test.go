package testkeys

import "testing"

// TestMixIsABijection: Mix's inverse undoes it, so no two keys collide.
func TestMixIsABijection(t *testing.T) {
	unmix := func(x uint64) uint64 {
		x ^= x>>31 ^ x>>62
		x *= 0x319642b2d24d8ec3
		x ^= x>>27 ^ x>>54
		x *= 0x96de1b173f119089
		x ^= x>>30 ^ x>>60
		return x
	}
	for _, x := range []uint64{0, 1, 2, 12345, 1 << 63, ^uint64(0)} {
		if got := unmix(Mix(x)); got != x {
			t.Errorf("unmix(Mix(%#x)) = %#x", x, got)
		}
	}
	if Mix(0) != 0 || Mix(1) == 1 {
		t.Errorf("Mix(0) = %#x, Mix(1) = %#x", Mix(0), Mix(1))
	}
}

func TestKey16(t *testing.T) {
	var a, b [16]byte
	ka, kb := string(Key16(&a, 7)), string(Key16(&b, 8))
	if len(ka) != 16 || ka == kb || ka[8] != 7 {
		t.Errorf("Key16: %x %x", ka, kb)
	}
}

package ohbloom

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// Inspect reports each kind's geometry and key count as the loaded filter
// does, without loading it.
func TestInspectFields(t *testing.T) {
	dir := t.TempDir()
	save := func(name string, f interface{ Save(string) error }) string {
		p := filepath.Join(dir, name)
		if err := f.Save(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	size := func(p string) int64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}

	f, _ := NewWithConfig(Config{Capacity: 10_000, FPR: 0.001, Seed: 42})
	for i := range 7000 {
		f.AddString(fmt.Sprint(i))
	}
	p := save("f.ohb", f)
	want := FileInfo{Kind: KindFilter, Version: FormatV1, Size: size(p), Seed: 42, Capacity: 10_000, TargetFPR: 0.001,
		Blocks: f.Blocks(), K: f.K(), Stages: 1, Count: f.EstimatedCount()}
	if got, err := Inspect(p); err != nil || got != want {
		t.Errorf("Inspect of a Filter:\n got %+v, %v\nwant %+v", got, err, want)
	}
	if c := f.EstimatedCount(); c < 6800 || c > 7200 {
		t.Errorf("7000 keys estimated as %d", c)
	}

	explicit, _ := NewWithConfig(Config{Blocks: 3, K: 5})
	p = save("explicit.ohb", explicit)
	want = FileInfo{Kind: KindFilter, Version: FormatV1, Size: size(p), Blocks: 3, K: 5, Stages: 1}
	if got, err := Inspect(p); err != nil || got != want {
		t.Errorf("Inspect of an empty Filter of explicit geometry:\n got %+v, %v\nwant %+v", got, err, want)
	}

	c := NewAtomicCounting(2000, 0.01)
	for i := range 1500 {
		c.AddString(fmt.Sprint(i))
	}
	p = save("c.ohb", c)
	want = FileInfo{Kind: KindCounting, Version: FormatV1, Size: size(p), Capacity: 2000, TargetFPR: 0.01,
		Blocks: c.Blocks(), K: c.K(), Stages: 1, Count: c.EstimatedCount()}
	if got, err := Inspect(p); err != nil || got != want {
		t.Errorf("Inspect of a CountingFilter:\n got %+v, %v\nwant %+v", got, err, want)
	}

	s, _ := NewScalableWithConfig(Config{Capacity: 100, FPR: 0.02, Growth: 3, Seed: 7})
	for i := range 2000 {
		s.AddString(fmt.Sprint(i))
	}
	p = save("s.ohb", s)
	var blocks uint64
	for i := range s.Stages() {
		blocks += s.Stage(i).Blocks()
	}
	want = FileInfo{Kind: KindScalable, Version: FormatV2, Size: size(p), Seed: 7, Capacity: 100, TargetFPR: 0.02,
		Blocks: blocks, Stages: s.Stages(), Growth: 3, Count: s.Count()}
	if got, err := Inspect(p); err != nil || got != want || got.Stages < 3 {
		t.Errorf("Inspect of a ScalableFilter:\n got %+v, %v\nwant %+v", got, err, want)
	}

	// Version 1 scalable files record no counts: Inspect counts them as
	// ReadFrom does.
	for _, name := range []string{"v1-350.bin", "v1-350-then-1000.bin"} {
		p := filepath.Join("testdata", "scalable", name)
		old, err := LoadScalable(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Inspect(p)
		if err != nil || got.Kind != KindScalable || got.Version != FormatV1 || got.Count != old.Count() ||
			got.Stages != old.Stages() || got.Growth != 2 || got.Count == 0 {
			t.Errorf("Inspect of %s: %+v, %v; loaded: %d stages, count %d", name, got, err, old.Stages(), old.Count())
		}
	}
}

// On a damaged file Inspect still says what the header said.
func TestInspectDamagedKeepsTheHeader(t *testing.T) {
	c := NewCounting(100, 0.01)
	data := encoding(t, c)
	data[len(data)-20] ^= 1
	p := filepath.Join(t.TempDir(), "c.ohb")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := Inspect(p)
	if !errors.Is(err, ErrChecksum) || info.Kind != KindCounting || info.Blocks != c.Blocks() {
		t.Fatalf("Inspect of a damaged counting file: %+v, %v", info, err)
	}
	if got := Kind(9).String(); got != "Kind(9)" {
		t.Fatalf("Kind(9) prints as %q", got)
	}
}

// FuzzInspect: never a panic; Inspect succeeds exactly where the decoder of
// the kind it names reads all of the bytes, and then agrees with the
// decoded filter; an error wraps one of the sentinels.
func FuzzInspect(f *testing.F) {
	fuzzSeeds(f)
	c := NewCounting(100, 0.01)
	c.AddString("seed")
	good, _ := c.MarshalBinary()
	f.Add(good)
	f.Add(good[:len(good)-3])
	addScalableSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := inspect(bytes.NewReader(data), int64(len(data)))
		whole := func(n int64, err error) bool { return err == nil && n == int64(len(data)) }
		var fl Filter
		var cf CountingFilter
		var sf ScalableFilter
		var want FileInfo
		switch {
		case whole(fl.ReadFrom(bytes.NewReader(data))):
			want = FileInfo{Kind: KindFilter, Seed: fl.Seed(), Capacity: fl.Capacity(), TargetFPR: fl.TargetFPR(),
				Blocks: fl.Blocks(), K: fl.K(), Stages: 1, Count: fl.EstimatedCount()}
		case whole(cf.ReadFrom(bytes.NewReader(data))):
			want = FileInfo{Kind: KindCounting, Seed: cf.Seed(), Capacity: cf.capacity, TargetFPR: cf.targetFPR,
				Blocks: cf.Blocks(), K: cf.K(), Stages: 1, Count: cf.EstimatedCount()}
		case whole(sf.ReadFrom(bytes.NewReader(data))):
			want = FileInfo{Kind: KindScalable, Seed: sf.config.Seed, Capacity: sf.config.Capacity,
				TargetFPR: sf.config.FPR, Stages: sf.Stages(), Growth: sf.config.Growth, Count: sf.Count()}
			for i := range sf.Stages() {
				want.Blocks += sf.Stage(i).Blocks()
			}
		default:
			if err == nil {
				t.Fatalf("Inspect accepts what no decoder reads whole: %+v", info)
			}
			checkDecodeError(t, err, nil)
			return
		}
		if err != nil {
			t.Fatalf("Inspect refuses a %v that decodes: %v", want.Kind, err)
		}
		want.Version, want.Size = int(data[8]), int64(len(data))
		// The rate is compared bit for bit: a header may record a NaN.
		sameRate := math.Float64bits(info.TargetFPR) == math.Float64bits(want.TargetFPR)
		info.TargetFPR, want.TargetFPR = 0, 0
		if info != want || !sameRate {
			t.Fatalf("Inspect says\n %+v\nthe decoder\n %+v", info, want)
		}
	})
}

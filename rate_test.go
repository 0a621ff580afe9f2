package ohbloom_test

import (
	"errors"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"github.com/ohbloom/ohbloom"
)

// bits-and-blooms' New(m bits, k hashes) habit does not compile: the rate
// is a type parameter that an integer does not satisfy. The calls with a
// rate compile, and so does a type defined on float64.
func TestRateRefusesIntegersAtCompileTime(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the package from source, about 2 s")
	}
	src := `package p

import "github.com/ohbloom/ohbloom"

type myRate float64

func ok(p float64, r myRate) {
	_ = ohbloom.New(1000, 0.01)
	_ = ohbloom.New(1000, 1e-3)
	_ = ohbloom.New(1000, p)
	_ = ohbloom.NewAtomic(1000, r)
	_ = ohbloom.NewCounting(1000, 0.5)
	_ = ohbloom.NewAtomicCounting(1000, p)
	_ = ohbloom.NewScalable(1000, 0.01)
	_ = ohbloom.NewAtomicScalable(1000, p)
}

func bad(k int) {
	_ = ohbloom.New(1000, 4) // refused
	_ = ohbloom.NewAtomic(1000, k) // refused
	_ = ohbloom.NewCounting(1000, 1) // refused
	_ = ohbloom.NewAtomicCounting(1000, 1/100) // refused
	_ = ohbloom.NewScalable(1000, 4) // refused
	_ = ohbloom.NewAtomicScalable(1000, 3) // refused
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[int]string{}
	conf := types.Config{
		Importer: importer.ForCompiler(fset, "source", nil),
		Error: func(err error) {
			te := err.(types.Error)
			lines[te.Fset.Position(te.Pos).Line] = te.Msg
		},
	}
	conf.Check("p", fset, []*ast.File{f}, nil)
	refused := 0
	for i, text := range strings.Split(src, "\n") {
		if !strings.HasSuffix(text, "// refused") {
			continue
		}
		refused++
		line := i + 1
		if msg, ok := lines[line]; !ok || !strings.Contains(msg, "does not satisfy ohbloom.Rate") {
			t.Errorf("%s: %q, want a compile error naming ohbloom.Rate", strings.TrimSpace(text), msg)
		}
		delete(lines, line)
	}
	if refused != 6 {
		t.Fatalf("%d lines to refuse", refused)
	}
	if len(lines) != 0 {
		t.Errorf("calls with a rate do not compile: %v", lines)
	}
}

// A rate out of range that only shows when the program runs panics with
// the call, the sentinel and, for a whole number, what the argument is.
func TestNewPanicSaysWhatTheRateIs(t *testing.T) {
	for _, c := range []struct {
		call func()
		want []string
	}{
		{func() { ohbloom.New(1000, 4.0) }, []string{"ohbloom.New(1000, 4): ", "FPR = 4", "not a number of hash functions"}},
		{func() { p := 1.0; ohbloom.NewScalable(10, p) }, []string{"ohbloom.NewScalable(10, 1): ", "not a number of hash functions"}},
		{func() { ohbloom.NewCounting(0, 0.01) }, []string{"ohbloom.NewCounting(0, 0.01): ", "Capacity is 0"}},
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, ohbloom.ErrInvalidConfig) {
					t.Fatalf("panic %v, want an error wrapping ErrInvalidConfig", err)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("panic %q, want %q in it", err, w)
					}
				}
				if strings.Contains(err.Error(), "hash functions") && strings.Contains(err.Error(), "Capacity") {
					t.Errorf("panic %q gives the hint for a valid rate", err)
				}
			}()
			c.call()
		}()
	}
}

//go:build ignore

// gen_fprtable measures the false positive rate of filters built by New and
// writes the table into doc.go and docs/sizing.md.
//
//	go run gen_fprtable.go
//
// For each target p it builds a filter for 10^6 keys, adds 10^6 random
// 16-byte keys and tests 10^7 others (3·10^7 for p ≤ 10^-4), from fixed
// seeds, so the table is the same on every run.
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/ohbloom/ohbloom"
)

func main() {
	const n = 1_000_000
	type row struct {
		p, bitsPerKey, expected, measured float64
		k                                 int
	}
	var rows []row
	for _, p := range []float64{0.1, 0.05, 0.01, 0.005, 0.001, 0.0001, 0.00001} {
		f := ohbloom.New(n, p)
		r := rand.New(rand.NewPCG(1, uint64(n)))
		var key [16]byte
		for range n {
			binary.LittleEndian.PutUint64(key[:], r.Uint64())
			binary.LittleEndian.PutUint64(key[8:], r.Uint64())
			f.Add(key[:])
		}
		queries := 10_000_000
		if p <= 1e-4 {
			queries = 30_000_000
		}
		q := rand.New(rand.NewPCG(2, uint64(n)))
		fp := 0
		for range queries {
			binary.LittleEndian.PutUint64(key[:], q.Uint64())
			binary.LittleEndian.PutUint64(key[8:], q.Uint64())
			if f.Test(key[:]) {
				fp++
			}
		}
		rows = append(rows, row{p, float64(f.Bits()) / n, ohbloom.ExpectedFPR(n, f.Blocks(), f.K()), float64(fp) / float64(queries), f.K()})
	}

	var code, md strings.Builder
	fmt.Fprintf(&code, "//\t%-9s %2s  %8s  %12s  %12s\n", "target p", "k", "bits/key", "expected FPR", "measured FPR")
	md.WriteString("| target p | k | bits/key | expected FPR | measured FPR |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&code, "//\t%-9g %2d  %8.3f  %12.4g  %12.4g\n", r.p, r.k, r.bitsPerKey, r.expected, r.measured)
		fmt.Fprintf(&md, "| %g | %d | %.3f | %.4g | %.4g |\n", r.p, r.k, r.bitsPerKey, r.expected, r.measured)
	}
	fmt.Print(code.String())

	// doc.go: replace the indented block that starts with the header line.
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		log.Fatal(err)
	}
	lines := strings.SplitAfter(string(doc), "\n")
	var out bytes.Buffer
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "//\ttarget p") {
			out.WriteString(code.String())
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "//\t") {
				i++
			}
			continue
		}
		out.WriteString(lines[i])
	}
	if err := os.WriteFile("doc.go", out.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}

	// docs/sizing.md: replace what stands between the markers.
	readme, err := os.ReadFile("docs/sizing.md")
	if err != nil {
		log.Fatal(err)
	}
	const begin, end = "<!-- fprtable -->\n", "<!-- /fprtable -->"
	s := string(readme)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		log.Fatal("docs/sizing.md has no fprtable markers")
	}
	s = s[:i+len(begin)] + md.String() + s[j:]
	if err := os.WriteFile("docs/sizing.md", []byte(s), 0o644); err != nil {
		log.Fatal(err)
	}
}

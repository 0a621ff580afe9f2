// Command quickstart shows an ohbloom filter at work in front of a
// "database": it loads a million block relations ("does user X block user
// Y?"), answers a million lookups of pairs that are not blocked, and reports
// how many would have reached the database, with the memory it took.
//
//	go run ./examples/quickstart [-n 1000000] [-p 0.01]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/ohbloom/ohbloom"
)

const base32 = "abcdefghijklmnopqrstuvwxyz234567"

// did returns a did:plc identifier drawn from r, as Bluesky's look.
func did(r *rand.Rand, buf []byte) []byte {
	buf = append(buf, "did:plc:"...)
	for range 24 {
		buf = append(buf, base32[r.IntN(32)])
	}
	return buf
}

// pairLen is the length of "did:plc:<24>|did:plc:<24>".
const pairLen = 2*(8+24) + 1

// keys holds pairs back to back.
type keys []byte

func (k keys) at(i uint64) []byte { return k[i*pairLen : (i+1)*pairLen] }

// pairs returns n random block relations drawn from seed.
func pairs(n uint64, seed uint64) keys {
	r := rand.New(rand.NewPCG(seed, seed))
	buf := make([]byte, 0, n*pairLen)
	for range n {
		buf = did(r, buf)
		buf = append(buf, '|')
		buf = did(r, buf)
	}
	return buf
}

func main() {
	n := flag.Uint64("n", 1_000_000, "block relations to load")
	p := flag.Float64("p", 0.01, "target false positive rate")
	flag.Parse()

	f, err := ohbloom.NewWithConfig(ohbloom.Config{Capacity: *n, FPR: *p})
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(2)
	}
	// The keys are generated first, so that the timings are the filter's.
	const queries = 1_000_000
	blocked := pairs(*n, 1)
	unblocked := pairs(queries, 2)

	start := time.Now()
	for i := range *n {
		f.Add(blocked.at(i))
	}
	load := time.Since(start)

	// Every loaded pair must be found: a Bloom filter has no false negatives.
	for i := range *n {
		if !f.Test(blocked.at(i)) {
			fmt.Fprintf(os.Stderr, "quickstart: loaded pair %d not found\n", i)
			os.Exit(1)
		}
	}

	// Lookups of pairs that are not blocked: only false positives reach
	// the database.
	start = time.Now()
	toDatabase := 0
	for i := range uint64(queries) {
		if f.Test(unblocked.at(i)) {
			toDatabase++
		}
	}
	lookups := time.Since(start)

	var file bytes.Buffer
	size, _ := f.WriteTo(&file)
	var g ohbloom.Filter
	if _, err := g.ReadFrom(&file); err != nil || !g.Equal(f) {
		fmt.Fprintln(os.Stderr, "quickstart: round trip failed:", err)
		os.Exit(1)
	}

	fmt.Printf("loaded %d block relations in %v (%.0f ns/key)\n", *n, load.Round(time.Millisecond), float64(load.Nanoseconds())/float64(*n))
	fmt.Printf("memory: %.2f MB, %.2f bits/key, k=%d\n", float64(f.SizeBytes())/1e6, float64(f.Bits())/float64(*n), f.K())
	fmt.Printf("estimated distinct keys from the bits: %d\n", f.EstimatedCount())
	fmt.Printf("%d lookups of unblocked pairs in %v (%.0f ns/lookup)\n", queries, lookups.Round(time.Millisecond), float64(lookups.Nanoseconds())/queries)
	fmt.Printf("sent to the database: %d (%.3f%%; target %.3f%%, expected from the bits %.3f%%)\n",
		toDatabase, 100*float64(toDatabase)/queries, 100**p, 100*f.EstimatedFPR())
	fmt.Printf("answered from memory: %.2f%%\n", 100-100*float64(toDatabase)/queries)
	fmt.Printf("snapshot: %d bytes, read back identical\n", size)
}

package classic_test

import (
	"bytes"
	"fmt"

	"github.com/ohbloom/ohbloom/classic"
)

func ExampleRead() {
	// A filter written by Guava's BloomFilter.writeTo (here built in Go,
	// byte for byte what Guava writes) is read and queried as Guava would.
	g, _ := classic.NewWithEstimates(classic.Guava, 5_000_000, 0.01)
	fmt.Println(g.Bits(), g.Hashes())
	g.AddString("from java")
	data, _ := g.MarshalBinary()

	f, _, err := classic.Read(bytes.NewReader(data), classic.Guava)
	if err != nil {
		panic(err)
	}
	fmt.Println(f.TestString("from java"), f.TestString("from go"))
	// Output:
	// 47925312 7
	// true false
}

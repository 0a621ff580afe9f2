package metrics_test

import (
	"fmt"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/tools/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// Wrap the filter a service shares between goroutines, register it, and
// test through the wrapper: the tests are counted (a sample of them), and
// the registry exports the positive rate with the filter's own figures.
func ExampleNewAtomic() {
	f := ohbloom.NewAtomic(1_000_000, 0.01)
	f.AddString("alice|bob")
	blocks := metrics.NewAtomic("blocks", f)
	reg := prometheus.NewRegistry()
	reg.MustRegister(blocks)

	fmt.Println(blocks.TestString("alice|bob"), blocks.TestString("bob|alice"))
	families, _ := reg.Gather()
	fmt.Println(len(families), "metric families")
	// Output:
	// true false
	// 8 metric families
}

// Any filter with Hash and TestHash can be wrapped, a read-only Snapshot
// among them.
func ExampleNew() {
	f := ohbloom.New(1000, 0.01)
	f.AddString("alice|bob")
	m := metrics.New("blocks", f)
	fmt.Println(m.TestString("alice|bob"))
	// Output: true
}

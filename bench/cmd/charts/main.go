// Command charts draws the docs' charts from the committed benchmark results:
// it reads docs/data and writes one SVG per chart into docs/img. From the
// repository's root:
//
//	go run ./bench/cmd/charts
//
// docs/charts.md lists the data files, their formats, and the commands that
// measure them again.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	data := flag.String("data", "docs/data", "directory of the benchmark results")
	out := flag.String("out", "docs/img", "directory the SVG files are written to")
	flag.Parse()
	written, err := run(*data, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "charts:", err)
		os.Exit(1)
	}
	for _, name := range written {
		fmt.Println(name)
	}
}

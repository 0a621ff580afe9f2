package main

import (
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	in := `goos: linux
BenchmarkLimits/n=1000000/op=test/round=1-2   	 100	        20.0 ns/op	         1.5 x-limit
BenchmarkLimits/n=1000000/op=test/round=2-2   	 100	        30.0 ns/op	         1.0 x-limit
BenchmarkLimits/n=1000000/op=test/round=3-2   	 100	        25.0 ns/op	         2.0 x-limit
BenchmarkLimits/n=1000000/op=xxh3/round=1-2   	 100	         5.0 ns/op
PASS
`
	rows, units, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	write(&out, rows, units)
	want := `| benchmark | rounds | ns/op | x-limit |
|---|---|---|---|
| Limits/n=1000000/op=test | 3 | 25 (20–30) | 1.5 (1–2) |
| Limits/n=1000000/op=xxh3 | 1 | 5 | |
`
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

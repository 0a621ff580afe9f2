// Command ohbloom builds, inspects, tests and merges ohbloom filter
// snapshots, and runs a demo of a filter in front of a database. Run
// "ohbloom help" for the subcommands.
package main

import (
	"os"

	"github.com/ohbloom/ohbloom/tools/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

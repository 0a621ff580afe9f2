// Package cli is the ohbloom command: each subcommand parses its flags and
// runs here, with its input and output passed in, so that tests can run it
// whole. Exit codes: 0 success, 1 failure, 2 usage error; "test" exits 3
// when a key is certainly absent.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	ExitAbsent  = 3 // test: at least one key is certainly not in the filter
)

// env is what a subcommand runs with.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

type command struct {
	summary string
	run     func(e env, args []string) int
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"build": {"build a snapshot from keys (a file, stdin, SQLite or PostgreSQL)", runBuild},
		"test":  {"test keys against a snapshot", runTest},
		"info":  {"describe a snapshot and check it", runInfo},
		"merge": {"write the union of compatible snapshots", runMerge},
		"demo":  {"a filter in front of a database, end to end, with no setup", runDemo},
		"serve": {"serve filters to any Redis client, with RedisBloom's commands", runServe},
	}
}

// Main runs the command line args and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := env{stdin, stdout, stderr}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "ohbloom: unknown command %q\n\n", args[0])
		usage(stderr)
		return ExitUsage
	}
	return c.run(e, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ohbloom <command> [flags] [args]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-6s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun \"ohbloom <command> --help\" for a command's flags.")
}

// flags returns a FlagSet for a subcommand whose usage line is synopsis.
func flags(e env, name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: ohbloom %s %s\n\n%s\n", name, synopsis, about)
		if hasFlags(fs) {
			fmt.Fprintln(e.stderr, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parse parses args; it returns an exit code and false when the command
// should stop (help asked for, or a usage error).
func parse(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK, false
		}
		return ExitUsage, false
	}
	return 0, true
}

// usageError reports a usage error in the command's terms.
func usageError(e env, fs *flag.FlagSet, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "ohbloom %s: %s\n", fs.Name(), fmt.Sprintf(format, a...))
	fmt.Fprintf(e.stderr, "Run \"ohbloom %s --help\" for usage.\n", fs.Name())
	return ExitUsage
}

// fail reports a failure.
func fail(e env, name string, err error) int {
	fmt.Fprintf(e.stderr, "ohbloom %s: %v\n", name, strings.TrimPrefix(err.Error(), "ohbloom: "))
	return ExitFailure
}

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
	"math"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
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

		"import-rdb": {"send a Redis RDB file's RedisBloom filters to a server, as RESTOREs", runImportRDB},
	}
}

// Version is the ohbloom command's version, as in CHANGELOG.md.
const Version = "0.1.0"

// Main runs the command line args and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := env{stdin, stdout, stderr}
	if len(args) == 0 {
		usage(stderr)
		return ExitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return ExitOK
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, versionLine())
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

// versionLine says which ohbloom this is and what built it: the version,
// the module's version and commit when the build recorded them, and Go's.
func versionLine() string {
	line := "ohbloom " + Version
	if info, ok := debug.ReadBuildInfo(); ok {
		var extra []string
		if v := info.Main.Version; v != "" && v != "(devel)" {
			extra = append(extra, "module "+v)
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				extra = append(extra, "commit "+s.Value[:12])
			}
		}
		if len(extra) > 0 {
			line += " (" + strings.Join(extra, ", ") + ")"
		}
	}
	return fmt.Sprintf("%s, built with %s %s/%s", line, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ohbloom <command> [flags] [args]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun \"ohbloom <command> --help\" for a command's flags, \"ohbloom --version\" for the version.")
}

// flags returns a FlagSet for a subcommand whose usage line is synopsis.
// Help asked for goes to stdout; a flag error is one line on stderr and a
// pointer to the help.
func flags(e env, name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		out := fs.Output()
		fs.SetOutput(e.stdout)
		defer fs.SetOutput(out)
		fmt.Fprintf(e.stdout, "usage: ohbloom %s %s\n\n%s\n", name, synopsis, about)
		if hasFlags(fs) {
			fmt.Fprintln(e.stdout, "\nflags:")
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
//
// Flags go before the arguments: Go's flag package stops at the first
// argument, so "ohbloom test a.ohb -q k" would test the key "-q". An
// argument that looks like a flag is a usage error unless "--" ended the
// flags: "ohbloom test -- a.ohb -k" tests the key "-k".
func parse(fs *flag.FlagSet, args []string) (int, bool) {
	// The flag package prints its errors bare and the help after them:
	// here an error is one line in the command's terms, and only -h gets
	// the help.
	help, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = help
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		help()
		return ExitOK, false
	}
	if err == nil {
		err = flagsLast(args, fs.Args())
	}
	if err != nil {
		fmt.Fprintf(out, "ohbloom %s: %v\n", fs.Name(), err)
		fmt.Fprintf(out, "Run \"ohbloom %s --help\" for usage.\n", fs.Name())
		return ExitUsage, false
	}
	return 0, true
}

// flagsLast refuses an argument that looks like a flag among rest, the
// arguments left after the flags of args, unless "--" ended the flags.
func flagsLast(args, rest []string) error {
	if first := len(args) - len(rest); first > 0 && args[first-1] == "--" {
		return nil
	}
	for _, a := range rest {
		if len(a) > 1 && a[0] == '-' {
			return fmt.Errorf("%s after an argument: flags go first; to pass an argument that starts with -, put -- before the arguments", a)
		}
	}
	return nil
}

// usageError reports a usage error in the command's terms.
func usageError(e env, fs *flag.FlagSet, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "ohbloom %s: %s\n", fs.Name(), fmt.Sprintf(format, a...))
	fmt.Fprintf(e.stderr, "Run \"ohbloom %s --help\" for usage.\n", fs.Name())
	return ExitUsage
}

// fail reports a failure.
func fail(e env, name string, err error) int {
	fmt.Fprintf(e.stderr, "ohbloom %s: %s\n", name, say(err))
	return ExitFailure
}

// warn reports something the user should know, without failing.
func warn(e env, name, format string, a ...any) {
	fmt.Fprintf(e.stderr, "ohbloom %s: warning: %s\n", name, fmt.Sprintf(format, a...))
}

// say is err's message without the "ohbloom: " the library's errors
// start with: the command's own "ohbloom NAME: " says it.
func say(err error) string { return strings.TrimPrefix(err.Error(), "ohbloom: ") }

// isSet reports whether the flag called name was given.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// count is a flag holding a number of keys: an integer (1000000) or, the
// same number in the form people write large counts in, 1e6. Anything that
// is not a whole number from 1 to 2^63 is refused, never rounded.
type count uint64

func (c *count) String() string { return strconv.FormatUint(uint64(*c), 10) }

func (c *count) Set(s string) error {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		*c = count(n)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f >= 1<<63 {
		return errors.New("want a whole number of keys, such as 1000000 or 1e6")
	}
	*c = count(f)
	return nil
}

package cli

import (
	"bufio"
	"fmt"
	"io/fs"
	"math"
	"os"

	"github.com/ohbloom/ohbloom"
)

// openSnapshot is ohbloom.Open for a path the user named, which it first
// checks is a regular file: opening a FIFO blocks until something writes
// to it, and a device or a directory is no snapshot.
func openSnapshot(path string) (*ohbloom.Snapshot, error) {
	if err := checkRegular(path); err != nil {
		return nil, err
	}
	return ohbloom.Open(path)
}

// checkRegular refuses a path that exists and is not a regular file
// (symbolic links are followed, as open follows them). A path that does
// not exist is left to the open, whose error says so.
func checkRegular(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch m := st.Mode(); {
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m.IsDir():
		what = "a directory"
	}
	return fmt.Errorf("%s is %s, not a snapshot file", path, what)
}

func runTest(e env, args []string) int {
	fs := flags(e, "test", "SNAPSHOT [KEY ...]",
		"Tests keys against a snapshot: those given as arguments, or else the lines\n"+
			"of stdin. "+lineRule+" Prints each key with \"possibly\n"+
			"present\" or \"absent\". Exits 0 when every key is possibly present and 3\n"+
			"when one is certainly absent. The snapshot is checked in full first (its\n"+
			"checksum): a damaged file is an error, never an answer.")
	quiet := fs.Bool("q", false, "print nothing; only the exit code tells")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() < 1 {
		return usageError(e, fs, "a snapshot is required")
	}
	for _, k := range fs.Args()[1:] {
		if k == "" {
			return usageError(e, fs, "an empty key: empty keys are not keys, as empty lines are not")
		}
	}
	s, err := openSnapshot(fs.Arg(0))
	if err != nil {
		return fail(e, "test", err)
	}
	defer s.Close()
	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	absent := false
	// TestChecked: a file truncated after Open is an error, not a crash.
	check := func(key []byte) error {
		ok, err := s.TestChecked(key)
		if err != nil {
			return err
		}
		absent = absent || !ok
		if *quiet {
			return nil
		}
		verdict := "absent"
		if ok {
			verdict = "possibly present"
		}
		fmt.Fprintf(out, "%s\t%s\n", key, verdict)
		return nil
	}
	if fs.NArg() > 1 {
		for _, k := range fs.Args()[1:] {
			if err := check([]byte(k)); err != nil {
				out.Flush()
				return fail(e, "test", err)
			}
		}
	} else {
		keys := newKeyScanner(e.stdin)
		for key, ok := keys.next(); ok; key, ok = keys.next() {
			if err := check(key); err != nil {
				out.Flush()
				return fail(e, "test", err)
			}
		}
		if err := keys.err(); err != nil {
			out.Flush()
			return fail(e, "test", fmt.Errorf("stdin: %w", err))
		}
	}
	if absent {
		return ExitAbsent
	}
	return ExitOK
}

func runInfo(e env, args []string) int {
	fs := flags(e, "info", "SNAPSHOT",
		"Describes a snapshot: its geometry, what it was sized for, how full it is,\n"+
			"how many keys it holds by estimate, and its false positive rate now. It\n"+
			"reads the whole file and checks its checksum.")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(e, fs, "exactly one snapshot is required")
	}
	path := fs.Arg(0)
	s, err := openSnapshot(path) // checks the checksum
	if err != nil {
		return fail(e, "info", err)
	}
	defer s.Close()
	w := e.stdout
	fmt.Fprintf(w, "file:            %s (format v%d, checksum ok)\n", path, ohbloom.FormatV1)
	fmt.Fprintf(w, "geometry:        %d blocks of 512 bits, k=%d, %d bytes\n", s.Blocks(), s.K(), s.SizeBytes())
	fmt.Fprintf(w, "seed:            %#x\n", s.Seed())
	if s.Capacity() > 0 {
		fmt.Fprintf(w, "sized for:       %d keys at p=%g (%.2f bits/key; expected FPR there %.4g)\n",
			s.Capacity(), s.TargetFPR(), float64(s.Bits())/float64(s.Capacity()), ohbloom.ExpectedFPR(s.Capacity(), s.Blocks(), s.K()))
	}
	fmt.Fprintf(w, "fill ratio:      %.4f\n", s.FillRatio())
	if n := s.EstimatedCount(); n == math.MaxUint64 {
		// Every bit set: no count can be read from the bits, and every
		// key tests "possibly present".
		fmt.Fprintf(w, "estimated keys:  saturated (every bit is set; too many keys to estimate)\n")
		fmt.Fprintf(w, "FPR now:         saturated (every key tests possibly present)\n")
	} else {
		fmt.Fprintf(w, "estimated keys:  %d\n", n)
		fmt.Fprintf(w, "FPR now:         %.4g\n", s.EstimatedFPR())
	}
	if c := s.Capacity(); c > 0 && s.EstimatedFPR() > s.TargetFPR() {
		warn(e, "info", "the filter holds more keys than the %d it was sized for: its false positive rate is %.4g, not %g",
			c, s.EstimatedFPR(), s.TargetFPR())
	}
	return ExitOK
}

func runMerge(e env, args []string) int {
	fs := flags(e, "merge", "-o OUT SNAPSHOT SNAPSHOT [...]",
		"Writes the union of snapshots of the same geometry and seed: a key\n"+
			"possibly present in any of them is possibly present in the result.")
	out := fs.String("o", "", "snapshot file to write (required)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *out == "" {
		return usageError(e, fs, "-o is required")
	}
	if fs.NArg() < 2 {
		return usageError(e, fs, "at least two snapshots are required")
	}
	if err := checkOutput(*out); err != nil {
		return usageError(e, fs, "%v", err)
	}
	if err := checkRegular(fs.Arg(0)); err != nil {
		return fail(e, "merge", err)
	}
	acc, err := ohbloom.Load(fs.Arg(0))
	if err != nil {
		return fail(e, "merge", err)
	}
	for _, path := range fs.Args()[1:] {
		s, err := openSnapshot(path) // checks the checksum; errors name the path
		if err != nil {
			return fail(e, "merge", err)
		}
		err = acc.Union(s.ToFilter())
		s.Close()
		if err != nil { // incompatible: the library cannot know the path
			return fail(e, "merge", fmt.Errorf("%s and %s: %s", fs.Arg(0), path, say(err)))
		}
	}
	if err := acc.Save(*out); err != nil {
		return fail(e, "merge", err)
	}
	keys := fmt.Sprintf("about %d keys", acc.EstimatedCount())
	if acc.EstimatedCount() == math.MaxUint64 {
		keys = "saturated (every bit is set)"
	}
	fmt.Fprintf(e.stdout, "wrote %s: union of %d snapshots, %s\n", *out, fs.NArg(), keys)
	if c := acc.Capacity(); c > 0 && acc.EstimatedFPR() > acc.TargetFPR() {
		warn(e, "merge", "the union holds more keys than the %d each filter was sized for: its false positive rate is now %.4g, not %g",
			c, acc.EstimatedFPR(), acc.TargetFPR())
	}
	return ExitOK
}

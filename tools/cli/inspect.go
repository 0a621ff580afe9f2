package cli

import (
	"bufio"
	"fmt"

	"github.com/ohbloom/ohbloom"
)

func runTest(e env, args []string) int {
	fs := flags(e, "test", "SNAPSHOT [KEY ...]",
		"Tests keys against a snapshot: those given as arguments, or else the lines\n"+
			"of stdin. Prints each key with \"possibly present\" or \"absent\". Exits 0\n"+
			"when every key is possibly present and 3 when one is certainly absent.")
	quiet := fs.Bool("q", false, "print nothing; only the exit code tells")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() < 1 {
		return usageError(e, fs, "a snapshot is required")
	}
	s, err := ohbloom.Open(fs.Arg(0))
	if err != nil {
		return fail(e, "test", err)
	}
	defer s.Close()
	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	absent := false
	check := func(key []byte) {
		ok := s.Test(key)
		absent = absent || !ok
		if *quiet {
			return
		}
		verdict := "absent"
		if ok {
			verdict = "possibly present"
		}
		fmt.Fprintf(out, "%s\t%s\n", key, verdict)
	}
	if fs.NArg() > 1 {
		for _, k := range fs.Args()[1:] {
			check([]byte(k))
		}
	} else {
		sc := bufio.NewScanner(e.stdin)
		sc.Buffer(make([]byte, 64<<10), maxKeyLine)
		for sc.Scan() {
			line := sc.Bytes()
			if len(line) > 0 && line[len(line)-1] == '\r' {
				line = line[:len(line)-1]
			}
			check(line)
		}
		if err := sc.Err(); err != nil {
			out.Flush()
			return fail(e, "test", err)
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
	s, err := ohbloom.Open(path)
	if err != nil {
		return fail(e, "info", err)
	}
	defer s.Close()
	if err := s.Verify(); err != nil {
		return fail(e, "info", err)
	}
	w := e.stdout
	fmt.Fprintf(w, "file:            %s (format v%d, checksum ok)\n", path, ohbloom.FormatV1)
	fmt.Fprintf(w, "geometry:        %d blocks of 512 bits, k=%d, %d bytes\n", s.Blocks(), s.K(), s.SizeBytes())
	fmt.Fprintf(w, "seed:            %#x\n", s.Seed())
	if s.Capacity() > 0 {
		fmt.Fprintf(w, "sized for:       %d keys at p=%g (%.2f bits/key; expected FPR there %.4g)\n",
			s.Capacity(), s.TargetFPR(), float64(s.Cap())/float64(s.Capacity()), ohbloom.ExpectedFPR(s.Capacity(), s.Blocks(), s.K()))
	}
	fmt.Fprintf(w, "fill ratio:      %.4f\n", s.FillRatio())
	fmt.Fprintf(w, "estimated keys:  %d\n", s.EstimatedCount())
	fmt.Fprintf(w, "FPR now:         %.4g\n", s.EstimatedFPR())
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
	acc, err := ohbloom.Load(fs.Arg(0))
	if err != nil {
		return fail(e, "merge", err)
	}
	for _, path := range fs.Args()[1:] {
		s, err := ohbloom.Open(path)
		if err != nil {
			return fail(e, "merge", err)
		}
		err = s.Verify()
		if err == nil {
			err = acc.Union(s.ToFilter())
		}
		s.Close()
		if err != nil {
			return fail(e, "merge", fmt.Errorf("%s: %w", path, err))
		}
	}
	if err := acc.Save(*out); err != nil {
		return fail(e, "merge", err)
	}
	fmt.Fprintf(e.stdout, "wrote %s: union of %d snapshots, about %d keys\n", *out, fs.NArg(), acc.EstimatedCount())
	return ExitOK
}

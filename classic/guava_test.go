package classic

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// guavaJar is where Debian's libguava-java puts Guava.
const guavaJar = "/usr/share/java/guava.jar"

// compileGuavaCompat compiles testdata/guava/GuavaCompat.java against
// Debian's Guava and returns the classpath to run it with. Without a JDK or
// Guava the test is skipped, but in CI (.ci/run installs both) it fails.
func compileGuavaCompat(t *testing.T) string {
	_, errJava := exec.LookPath("javac")
	_, errJar := os.Stat(guavaJar)
	if errJava != nil || errJar != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must install default-jdk-headless and libguava-java: %v %v", errJava, errJar)
		}
		t.Skip("no JDK or no Guava here")
	}
	dir := t.TempDir()
	out, err := exec.Command("javac", "-cp", guavaJar, "-d", dir, filepath.Join("testdata", "guava", "GuavaCompat.java")).CombinedOutput()
	if err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return dir + string(os.PathListSeparator) + guavaJar
}

// guavaKeys is one of Guava's funnels with keys for it: the lines the Java
// side reads, and what the Go side adds and tests.
type guavaKeys struct {
	funnel string
	lines  []string
	add    func(f *Filter, i int)
	test   func(f *Filter, i int) bool
}

func newGuavaKeys(funnel string, n int, seed uint64) guavaKeys {
	r := rand.New(rand.NewPCG(seed, 3))
	g := guavaKeys{funnel: funnel, lines: make([]string, n)}
	switch funnel {
	case "bytes":
		raw := make([][]byte, n)
		for i := range raw {
			raw[i] = make([]byte, r.IntN(40))
			for j := range raw[i] {
				raw[i][j] = byte(r.Uint32())
			}
			g.lines[i] = hex.EncodeToString(raw[i])
		}
		g.add = func(f *Filter, i int) { f.Add(raw[i]) }
		g.test = func(f *Filter, i int) bool { return f.Test(raw[i]) }
	case "string":
		for i := range g.lines {
			g.lines[i] = fmt.Sprintf("did:plc:%x|ünïcödé-%d", r.Uint64(), i)
		}
		g.add = func(f *Filter, i int) { f.AddString(g.lines[i]) }
		g.test = func(f *Filter, i int) bool { return f.TestString(g.lines[i]) }
	case "long":
		vals := make([]uint64, n)
		for i := range vals {
			vals[i] = r.Uint64()
			g.lines[i] = strconv.FormatInt(int64(vals[i]), 10)
		}
		g.add = func(f *Filter, i int) { f.AddUint64(vals[i]) }
		g.test = func(f *Filter, i int) bool { return f.TestUint64(vals[i]) }
	}
	return g
}

func writeLines(t *testing.T, path string, lines []string) {
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGuavaCompatibility checks both directions for every funnel: a filter
// Guava creates and writes is byte-for-byte the one Filter builds
// from the same keys, reads back, and answers every query as Guava's
// mightContain does; and a filter Filter writes is read by Guava,
// which then answers every query as Filter does.
func TestGuavaCompatibility(t *testing.T) {
	classpath := compileGuavaCompat(t)
	for _, funnel := range []string{"bytes", "string", "long"} {
		t.Run(funnel, func(t *testing.T) {
			dir := t.TempDir()
			const n, p = 2000, 0.01
			keys := newGuavaKeys(funnel, n+20_000, 1) // the first n are added
			writeLines(t, filepath.Join(dir, "keys"), keys.lines[:n])
			writeLines(t, filepath.Join(dir, "queries"), keys.lines)

			// Guava → Go.
			out, err := exec.Command("java", "-cp", classpath, "GuavaCompat", "create", funnel,
				strconv.Itoa(n), strconv.FormatFloat(p, 'g', -1, 64),
				filepath.Join(dir, "keys"), filepath.Join(dir, "guava.bin"), filepath.Join(dir, "queries")).Output()
			if err != nil {
				t.Fatalf("java create: %v", err)
			}
			answers := strings.Fields(string(out))
			written, _ := os.ReadFile(filepath.Join(dir, "guava.bin"))
			read, nread, err := Read(bytes.NewReader(written), Guava)
			if err != nil || nread != int64(len(written)) {
				t.Fatalf("Read of Guava's filter: %v (%d of %d bytes)", err, nread, len(written))
			}
			ours, _ := NewWithEstimates(Guava, n, p)
			for i := range n {
				keys.add(ours, i)
			}
			if mine, _ := ours.MarshalBinary(); !bytes.Equal(mine, written) {
				t.Fatalf("our filter (m=%d k=%d) is not Guava's byte for byte (m=%d k=%d)", ours.Bits(), ours.Hashes(), read.Bits(), read.Hashes())
			}
			positives := 0
			for i := range keys.lines {
				want := answers[i] == "1"
				if keys.test(read, i) != want {
					t.Fatalf("query %d: Go says %v, Guava %v", i, !want, want)
				}
				if i >= n && want {
					positives++
				}
			}
			t.Logf("Guava → Go: m=%d k=%d, %d queries agree, %d false positives of 20000", read.Bits(), read.Hashes(), len(keys.lines), positives)

			// Go → Guava, with other parameters and keys.
			other := newGuavaKeys(funnel, 5000, 2)
			f, _ := NewWithEstimates(Guava, 1000, 0.05)
			for i := range 1000 {
				other.add(f, i)
			}
			data, _ := f.MarshalBinary()
			os.WriteFile(filepath.Join(dir, "go.bin"), data, 0o644)
			writeLines(t, filepath.Join(dir, "queries2"), other.lines)
			out, err = exec.Command("java", "-cp", classpath, "GuavaCompat", "read", funnel,
				filepath.Join(dir, "go.bin"), filepath.Join(dir, "queries2")).Output()
			if err != nil {
				t.Fatalf("java read: %v", err)
			}
			answers = strings.Fields(string(out))
			for i := range other.lines {
				if want := answers[i] == "1"; other.test(f, i) != want {
					t.Fatalf("query %d of Go's filter: Go says %v, Guava %v", i, !want, want)
				}
			}
		})
	}
}

// TestGuavaZeroExpectedInsertions: BloomFilter.create(funnel, 0, p), which
// Guava sizes as for one key, is byte for byte NewWithEstimates(
// Guava, 0, p), before and after keys are put in.
func TestGuavaZeroExpectedInsertions(t *testing.T) {
	classpath := compileGuavaCompat(t)
	dir := t.TempDir()
	for _, keys := range [][]string{nil, {"a", "did:plc:alice", "ünïcödé"}} {
		for _, p := range []float64{0.01, 0.3} {
			writeLines(t, filepath.Join(dir, "keys"), keys)
			if keys == nil {
				os.WriteFile(filepath.Join(dir, "keys"), nil, 0o644)
			}
			writeLines(t, filepath.Join(dir, "queries"), []string{"a", "b"})
			out := filepath.Join(dir, "guava.bin")
			if err := exec.Command("java", "-cp", classpath, "GuavaCompat", "create", "string", "0",
				strconv.FormatFloat(p, 'g', -1, 64), filepath.Join(dir, "keys"), out, filepath.Join(dir, "queries")).Run(); err != nil {
				t.Fatalf("java create with 0 expected insertions: %v", err)
			}
			want, _ := os.ReadFile(out)
			f, err := NewWithEstimates(Guava, 0, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				f.AddString(k)
			}
			if got, _ := f.MarshalBinary(); !bytes.Equal(got, want) {
				t.Errorf("%d keys at p=%v: ours %x, Guava's %x", len(keys), p, got, want)
			}
		}
	}
}

package classic

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ohbloom/ohbloom"
	"github.com/ohbloom/ohbloom/internal/sysmem"
	"github.com/ohbloom/ohbloom/internal/testkeys"
)

// TestGuavaSizeLimit: Guava holds at most 2^31−1 words; beyond, New
// and NewWithEstimates refuse before allocating anything.
func TestGuavaSizeLimit(t *testing.T) {
	if err := checkGuavaWords(math.MaxInt32); err != nil {
		t.Errorf("2^31−1 words: %v", err)
	}
	if err := checkGuavaWords(math.MaxInt32 + 1); !errors.Is(err, ohbloom.ErrTooLarge) {
		t.Errorf("2^31 words: %v", err)
	}
	for _, m := range []uint64{1 << 37, 1<<37 + 64, 1 << 38, 1 << 39} {
		if _, err := New(Guava, m, 3); !errors.Is(err, ohbloom.ErrTooLarge) {
			t.Errorf("New(Guava, %d, 3): %v", m, err)
		}
	}
	if _, err := NewWithEstimates(Guava, 1<<34, 0.01); !errors.Is(err, ohbloom.ErrTooLarge) {
		t.Errorf("2^34 keys at 1%%: %v", err)
	}
	// bits-and-blooms has no such limit, but showing it would take a 16 GiB
	// filter (2^31 words): too much for a test that shares the machine.
}

// TestClassicGuavaZeroKeys: Guava's create takes n = 0 as 1.
func TestClassicGuavaZeroKeys(t *testing.T) {
	zero, err := NewWithEstimates(Guava, 0, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	one, _ := NewWithEstimates(Guava, 1, 0.01)
	if !zero.Equal(one) || zero.Bits() != 64 || zero.Hashes() != 6 {
		t.Errorf("n = 0: m = %d, k = %d; n = 1: m = %d, k = %d", zero.Bits(), zero.Hashes(), one.Bits(), one.Hashes())
	}
	if _, err := NewWithEstimates(BitsAndBlooms, 0, 0.01); !errors.Is(err, ohbloom.ErrInvalidConfig) {
		t.Errorf("bits-and-blooms with n = 0: %v", err)
	}
}

// bbStream is a bits-and-blooms stream: m, k, the bitset's length, words.
func bbStream(m, k, length uint64, words ...uint64) []byte {
	var b []byte
	for _, v := range append([]uint64{m, k, length}, words...) {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

// TestClassicBitsAndBloomsOddStreams reads the streams bits-and-blooms'
// ReadFrom reads but which are not NewWithEstimates's: a bitset longer than
// m, an empty bitset, k beyond 2^16, k = 0. Each writes back as read, and
// an add past an empty bitset's length extends it as the bitset package
// does. bench/compat_test.go checks the same against the real library.
func TestClassicBitsAndBloomsOddStreams(t *testing.T) {
	for _, c := range []struct {
		name   string
		stream []byte
	}{
		{"FromWithM(2 words, 100, 3)", bbStream(100, 3, 128, 0xdeadbeef, 1<<63|1)},
		{"New(0, 3)", bbStream(1, 3, 0)},
		{"k = 70000", bbStream(1000, 70000, 1000, make([]uint64, 16)...)},
		{"k = 0", bbStream(64, 0, 64, 0)},
		{"length 100 of m 200, bits set past it", bbStream(200, 2, 100, 0, ^uint64(0))},
	} {
		f, n, err := Read(bytes.NewReader(append(bytes.Clone(c.stream), 9, 9)), BitsAndBlooms)
		if err != nil || n != int64(len(c.stream)) {
			t.Errorf("%s: %v, read %d of %d bytes", c.name, err, n, len(c.stream))
			continue
		}
		if out, _ := f.MarshalBinary(); !bytes.Equal(out, c.stream) {
			t.Errorf("%s: written back differently", c.name)
		}
	}
	// Bits a test cannot see do not count as set.
	f, _, _ := Read(bytes.NewReader(bbStream(100, 3, 128, 0, ^uint64(0))), BitsAndBlooms)
	if got := f.FillRatio(); got != 36.0/100 {
		t.Errorf("FillRatio %v, want 0.36: bits 64..99 of 100", got)
	}
	// k = 0 says yes to everything, as bits-and-blooms' Test does.
	f, _, _ = Read(bytes.NewReader(bbStream(64, 0, 64, 0)), BitsAndBlooms)
	if !f.TestString("anything") {
		t.Error("k = 0 tests absent")
	}
	// New(0, 3): m = 1, every position is 0, past the empty bitset: absent
	// until added, which extends the bitset to 1 bit.
	f, _, _ = Read(bytes.NewReader(bbStream(1, 3, 0)), BitsAndBlooms)
	if f.TestString("x") {
		t.Error("an empty bitset tests present")
	}
	f.AddString("x")
	if !f.TestString("y") {
		t.Error("m = 1: every key is position 0, set by the add")
	}
	if out, _ := f.MarshalBinary(); !bytes.Equal(out, bbStream(1, 3, 1, 1)) {
		t.Errorf("after an add: %x", out)
	}
	// Bits past the length are invisible until an add extends over them.
	f, _, _ = Read(bytes.NewReader(bbStream(200, 1, 100, 0, ^uint64(0))), BitsAndBlooms)
	before := f.FillRatio()
	for i := 0; f.length < 128 && i < 10000; i++ {
		f.AddString(strconv.Itoa(i))
	}
	if f.length < 128 || f.words[1] != ^uint64(0) || before == f.FillRatio() {
		t.Errorf("extension: length %d, word 1 %#x", f.length, f.words[1])
	}
	for _, bad := range [][]byte{bbStream(0, 3, 0), bbStream(1<<41, 3, 0), bbStream(100, 1<<32+1, 100, 0, 0)} {
		if _, _, err := Read(bytes.NewReader(bad), BitsAndBlooms); !errors.Is(err, ohbloom.ErrCorrupt) {
			t.Errorf("%x: %v", bad[:24], err)
		}
	}
	if sysmem.RAMPlusSwap() < 1<<40/8 {
		if _, _, err := Read(bytes.NewReader(bbStream(1<<40, 3, 64, 0)), BitsAndBlooms); !errors.Is(err, ohbloom.ErrTooLarge) {
			t.Errorf("a short bitset that could grow past the machine: %v", err)
		}
	}
	// Guava's k is 1 to 255, its word count 1 to 2^31−1.
	for _, bad := range [][]byte{{1, 0, 0, 0, 0, 1}, {1, 3, 0x80, 0, 0, 0}, {1, 3, 0, 0, 0, 0}} {
		if _, _, err := Read(bytes.NewReader(bad), Guava); !errors.Is(err, ohbloom.ErrCorrupt) {
			t.Errorf("Guava %x: %v", bad, err)
		}
	}
}

// bbSynthetic streams a valid bits-and-blooms filter of the given number of
// words without holding it: its words are a function of their index.
type bbSynthetic struct {
	head  []byte
	words uint64
	next  uint64
	buf   [8]byte
	pend  []byte
}

func newBBSynthetic(words uint64) *bbSynthetic {
	return &bbSynthetic{head: bbStream(words*64, 7, words*64), words: words}
}

func (s *bbSynthetic) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(s.head) > 0 {
			c := copy(p[n:], s.head)
			s.head, n = s.head[c:], n+c
			continue
		}
		if len(s.pend) == 0 {
			if s.next == s.words {
				break
			}
			binary.BigEndian.PutUint64(s.buf[:], testkeys.Mix(s.next))
			s.pend, s.next = s.buf[:], s.next+1
		}
		c := copy(p[n:], s.pend)
		s.pend, n = s.pend[c:], n+c
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// readClassicFilterBytes is the filter TestReadClassicMemory reads: 256 MiB.
const readClassicFilterBytes = 256 << 20

// TestReadClassicMemory reads a valid 256 MiB bits-and-blooms stream and
// bounds what it costs: allocations at most 1.1 times the filter plus
// 4 MiB, measured here, and the growth of peak RSS at most 1.1 times the
// filter plus 8 MiB, measured in a fresh process (this test's binary run
// again) so that earlier tests' memory does not count.
func TestReadClassicMemory(t *testing.T) {
	if os.Getenv("OHBLOOM_READCLASSIC_CHILD") != "" {
		readClassicChild()
		return
	}
	if testing.Short() {
		t.Skip("reads a 256 MiB stream")
	}
	const limit = readClassicFilterBytes*11/10 + 4<<20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, n, err := Read(newBBSynthetic(readClassicFilterBytes/8), BitsAndBlooms)
	runtime.ReadMemStats(&after)
	if err != nil || n != readClassicFilterBytes+24 {
		t.Fatalf("Read: %v after %d bytes", err, n)
	}
	if f.words[12345] != testkeys.Mix(12345) {
		t.Fatal("wrong words")
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	if alloc > limit {
		t.Errorf("allocated %d bytes (%.3f× the filter), limit %d", alloc, float64(alloc)/readClassicFilterBytes, uint64(limit))
	}
	f = nil
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadClassicMemory$", "-test.count=1")
	cmd.Env = append(os.Environ(), "OHBLOOM_READCLASSIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var grown, elapsed int64
	for line := range strings.Lines(string(out)) {
		if _, err := fmt.Sscanf(line, "readclassic rss_growth=%d ns=%d", &grown, &elapsed); err == nil {
			break
		}
	}
	if grown == 0 {
		t.Fatalf("no figure from the child:\n%s", out)
	}
	t.Logf("Read of a %d MiB stream: %d MiB allocated (%.3f×), peak RSS +%d MiB (%.3f×), %v",
		readClassicFilterBytes>>20, alloc>>20, float64(alloc)/readClassicFilterBytes, grown>>20,
		float64(grown)/readClassicFilterBytes, time.Duration(elapsed))
	if grown > readClassicFilterBytes*11/10+8<<20 {
		t.Errorf("peak RSS grew by %d bytes (%.3f× the filter)", grown, float64(grown)/readClassicFilterBytes)
	}
}

// readClassicChild measures the growth of peak RSS (VmHWM) across one
// Read and prints it for the parent.
func readClassicChild() {
	base := vmHWM()
	start := time.Now()
	f, _, err := Read(bufio.NewReaderSize(newBBSynthetic(readClassicFilterBytes/8), 1<<16), BitsAndBlooms)
	elapsed := time.Since(start)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	runtime.KeepAlive(f)
	fmt.Printf("readclassic rss_growth=%d ns=%d\n", vmHWM()-base, elapsed.Nanoseconds())
}

// vmHWM returns the process's peak resident set in bytes, from
// /proc/self/status, or 0 where there is none.
func vmHWM() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

package redisbloom

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ohbloom/ohbloom/internal/redisbloomtest"
)

// cfGoldenRun is a script of a golden file, RedisBloom's replies to it
// and the state after.
type cfGoldenRun = redisbloomtest.CuckooRun

// cfGolden is a file of cuckoo filters the real RedisBloom module made
// (redisbloomtest.Cuckoo), its first run embedded as cfGoldenRun.
type cfGolden struct {
	Name    string
	Reserve []string
	cfGoldenRun
	AfterMore cfGoldenRun
}

// cfGoldenPaths returns the golden files, or nil where there are none.
func cfGoldenPaths() []string { return redisbloomtest.CuckooPaths("..") }

func loadCFGolden(t testing.TB) []*cfGolden {
	t.Helper()
	var out []*cfGolden
	for _, g := range redisbloomtest.LoadCuckoo(t, "..") {
		out = append(out, &cfGolden{g.Name, g.Reserve, g.CuckooRun, g.AfterMore})
	}
	return out
}

// items expands a script step's description of its items.
func (g *cfGolden) items(t testing.TB, desc string) [][]byte {
	t.Helper()
	return redisbloomtest.CuckooItems(t, g.Name, desc)
}

// prefix is what the file's item names start with: probes are prefix +
// "absent:" + i, counted items prefix + "item:" + i.
func (g *cfGolden) prefix(t testing.TB) string {
	t.Helper()
	return redisbloomtest.CuckooPrefix(t, g.Name, g.Script[0].Items)
}

func (g *cfGolden) config(t testing.TB) CuckooConfig {
	t.Helper()
	if g.Reserve == nil {
		return DefaultCuckooConfig(CuckooDefaultCapacity)
	}
	num := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: reserve %q: %v", g.Name, g.Reserve, err)
		}
		return v
	}
	c := DefaultCuckooConfig(num(g.Reserve[0]))
	for i := 1; i+1 < len(g.Reserve); i += 2 {
		v := num(g.Reserve[i+1])
		switch strings.ToUpper(g.Reserve[i]) {
		case "BUCKETSIZE":
			c.BucketSize = uint16(v)
		case "MAXITERATIONS":
			c.MaxIterations = uint16(v)
		case "EXPANSION":
			c.Expansion = uint16(v)
		default:
			t.Fatalf("%s: reserve option %q", g.Name, g.Reserve[i])
		}
	}
	if len(g.Reserve)%2 == 0 {
		t.Fatalf("%s: reserve %q: an option without a value", g.Name, g.Reserve)
	}
	return c
}

// cfUnderTest is what the golden test drives: both filter types.
type cfUnderTest interface {
	AddHash(h uint64) error
	AddUniqueHash(h uint64) (bool, error)
	TestHash(h uint64) bool
	CountHash(h uint64) uint64
	DeleteHash(h uint64) bool
	Compact()
	Info() CuckooInfo
	ScanDump(iter int64, dst []byte) (int64, []byte)
	LoadChunk(iter int64, data []byte) error
	MarshalRDB() []byte
}

// cfReplyOfError is the reply RedisBloom gives (as the files record it)
// for an error of an add.
func cfReplyOfError(t testing.TB, err error) string {
	switch {
	case errors.Is(err, ErrCuckooFull):
		return "ERR:Filter is full"
	case errors.Is(err, ErrCuckooCannotGrow):
		return "ERR:Insufficient memory"
	}
	t.Fatalf("unexpected error %v", err)
	return ""
}

// cfRun runs a script as RedisBloom's CF commands do (rebloom.c) and
// returns the replies, in the files' form. newFilter is called for the
// first command on a missing key.
func cfRun(t testing.TB, g *cfGolden, f *cfUnderTest, newFilter func() cfUnderTest, run *cfGoldenRun) []any {
	t.Helper()
	var replies []any
	for _, step := range run.Script {
		items := g.items(t, step.Items)
		cmd := strings.ToUpper(strings.Fields(step.Command)[0])
		for range max(step.Repeat, 1) {
			for _, item := range items {
				h := CuckooHash(item)
				add := func(unique, multi bool) any {
					if *f == nil {
						if strings.Contains(strings.ToUpper(step.Command), "NOCREATE") {
							return "ERR:not found"
						}
						*f = newFilter()
					}
					if (*f).Info().Filters >= CuckooDefaultMaxExpansions {
						return "ERR:Maximum expansions reached"
					}
					var ok = true
					var err error
					if unique {
						ok, err = (*f).AddUniqueHash(h)
					} else {
						err = (*f).AddHash(h)
					}
					switch {
					case err != nil && multi:
						return -1
					case err != nil:
						return cfReplyOfError(t, err)
					case ok:
						return 1
					}
					return 0
				}
				var reply any
				switch cmd {
				case "CF.ADD":
					reply = add(false, false)
				case "CF.ADDNX":
					reply = add(true, false)
				case "CF.INSERT":
					reply = add(false, true)
				case "CF.INSERTNX":
					reply = add(true, true)
				case "CF.DEL":
					switch {
					case *f == nil:
						reply = "ERR:Not found"
					case (*f).DeleteHash(h):
						reply = 1
					default:
						reply = 0
					}
				case "CF.EXISTS", "CF.MEXISTS":
					reply = 0
					if *f != nil && (*f).TestHash(h) {
						reply = 1
					}
				case "CF.COUNT":
					reply = 0
					if *f != nil {
						reply = int((*f).CountHash(h))
					}
				default:
					t.Fatalf("%s: command %q: not one this test knows", g.Name, step.Command)
				}
				replies = append(replies, reply)
			}
		}
	}
	return replies
}

// checkCFState compares a filter with the state RedisBloom recorded.
func checkCFState(t *testing.T, g *cfGolden, f cfUnderTest, want *cfGoldenRun) {
	t.Helper()
	prefix := g.prefix(t)
	var got []struct {
		it   int64
		data []byte
	}
	for it := int64(0); ; {
		next, data := f.ScanDump(it, nil)
		if next == 0 {
			if len(data) != 0 {
				t.Fatalf("iterator 0 with %d bytes", len(data))
			}
			break
		}
		got = append(got, struct {
			it   int64
			data []byte
		}{next, data})
		it = next
		if len(got) > len(want.Chunks)+1 {
			break
		}
	}
	if len(got) != len(want.Chunks) {
		t.Errorf("%d chunks, RedisBloom dumped %d", len(got), len(want.Chunks))
	}
	for i := range min(len(got), len(want.Chunks)) {
		w := want.Chunks[i]
		if got[i].it != w.Iterator || string(got[i].data) != string(w.Data) {
			t.Errorf("chunk %d: iterator %d and %d bytes (first difference at %d), RedisBloom %d and %d bytes",
				i, got[i].it, len(got[i].data), cfFirstDiff(got[i].data, w.Data), w.Iterator, len(w.Data))
		}
	}

	in := f.Info()
	gotInfo := map[string]uint64{
		"Size": in.Size, "Number of buckets": in.Buckets, "Number of filters": in.Filters,
		"Number of items inserted": in.Items, "Number of items deleted": in.Deleted,
		"Bucket size": in.BucketSize, "Expansion rate": in.Expansion, "Max iterations": in.MaxIterations,
	}
	if !reflect.DeepEqual(gotInfo, want.Info) {
		t.Errorf("CF.INFO %v, RedisBloom %v", gotInfo, want.Info)
	}

	var positives []int
	for i := range 20000 {
		if f.TestHash(CuckooHash([]byte(prefix + "absent:" + strconv.Itoa(i)))) {
			positives = append(positives, i)
		}
	}
	if !slices.Equal(positives, want.Positives) {
		t.Errorf("%d false positives, RedisBloom %d", len(positives), len(want.Positives))
	}
	counts := make([]uint64, len(want.Counts))
	for i := range counts {
		counts[i] = f.CountHash(CuckooHash([]byte(prefix + "item:" + strconv.Itoa(i))))
	}
	if !slices.Equal(counts, want.Counts) {
		i := 0
		for i < min(len(counts), len(want.Counts)) && counts[i] == want.Counts[i] {
			i++
		}
		t.Errorf("CF.COUNT of the first items differs from RedisBloom's first at item %d", i)
	}

	// The DUMP payload: the type byte, the module id, the value, the RDB
	// version and the CRC-64. The value must load to this very filter, and
	// ours must be the same values.
	body, encver := cfDumpBody(t, want.DumpPayload)
	var loaded CuckooFilter
	n, err := loaded.UnmarshalRDB(body, encver, 0)
	if err != nil {
		t.Fatalf("RedisBloom's DUMP payload: %v", err)
	}
	if len(body)-n != 10 {
		t.Errorf("the value took %d of %d bytes, leaving %d; want 10 (version and CRC)", n, len(body), len(body)-n)
	}
	if !cfStateEqual(&loaded, f) {
		t.Errorf("RedisBloom's DUMP payload loads to another filter")
	}
	if gotV, wantV := cfRDBValues(t, f.MarshalRDB()), cfRDBValues(t, body[:n]); !reflect.DeepEqual(gotV, wantV) {
		t.Errorf("MarshalRDB's values differ from RedisBloom's")
	}
}

// cfStateEqual compares a plain filter with any filter under test through
// their dumps: header and every chunk.
func cfStateEqual(a *CuckooFilter, b cfUnderTest) bool {
	if a.Info() != b.Info() {
		return false
	}
	for it := int64(0); ; {
		na, da := a.ScanDump(it, nil)
		nb, db := b.ScanDump(it, nil)
		if na != nb || string(da) != string(db) {
			return false
		}
		if na == 0 {
			return true
		}
		it = na
	}
}

func cfFirstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// cfDumpBody returns the module value of a DUMP payload and the encoding
// version from its module id.
func cfDumpBody(t testing.TB, p []byte) ([]byte, int) {
	t.Helper()
	if len(p) < 1 || p[0] != 7 {
		t.Fatalf("DUMP payload of type %v, want 7 (RDB_TYPE_MODULE_2)", p[:min(1, len(p))])
	}
	r := &rdbReader{b: p[1:]}
	id, err := r.plainLength()
	if err != nil {
		t.Fatal(err)
	}
	if id>>10 != CuckooRDBModuleID>>10 {
		t.Fatalf("module id %#x, want MBbloomCF's %#x", id, uint64(CuckooRDBModuleID))
	}
	return p[1+r.off:], int(id & 1023)
}

// cfRDBValues reads a module value into its unsigned numbers and strings,
// whatever their encodings.
func cfRDBValues(t testing.TB, b []byte) []any {
	t.Helper()
	r := &rdbReader{b: b}
	var out []any
	for {
		op, err := r.plainLength()
		if err != nil {
			t.Fatal(err)
		}
		switch op {
		case rdbOpcodeEOF:
			return out
		case rdbOpcodeUint:
			v, err := r.plainLength()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		case rdbOpcodeString:
			v, enc, err := r.length()
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case !enc:
				out = append(out, string(r.b[r.off:r.off+int(v)]))
				r.off += int(v)
			case v == rdbEncLZF:
				clen, _ := r.plainLength()
				ulen, _ := r.plainLength()
				s := make([]byte, ulen)
				if err := lzfDecompress(r.b[r.off:r.off+int(clen)], s); err != nil {
					t.Fatal(err)
				}
				r.off += int(clen)
				out = append(out, string(s))
			default:
				t.Fatalf("string encoding %d in a test value", v)
			}
		default:
			t.Fatalf("opcode %d", op)
		}
	}
}

// TestCuckooGolden replays every RedisBloom file on fresh filters, plain
// and concurrent, and on filters loaded from RedisBloom's chunks and from
// its DUMP payload, and holds each to RedisBloom's replies and states.
func TestCuckooGolden(t *testing.T) {
	for _, g := range loadCFGolden(t) {
		t.Run(g.Name, func(t *testing.T) {
			c := g.config(t)
			fresh := map[string]func() cfUnderTest{
				"plain": func() cfUnderTest {
					f, err := NewCuckoo(c)
					if err != nil {
						t.Fatal(err)
					}
					return f
				},
				"atomic": func() cfUnderTest {
					f, err := NewAtomicCuckoo(c)
					if err != nil {
						t.Fatal(err)
					}
					return f
				},
			}
			for _, kind := range []string{"plain", "atomic"} {
				t.Run(kind, func(t *testing.T) {
					var f cfUnderTest
					if g.Reserve != nil {
						f = fresh[kind]()
					}
					replies := cfRun(t, g, &f, fresh[kind], &g.cfGoldenRun)
					if want := g.Replies; !reflect.DeepEqual(replies, want) {
						t.Fatalf("replies differ from RedisBloom's at %s", cfFirstDiffAny(replies, want))
					}
					checkCFState(t, g, f, &g.cfGoldenRun)
					replies = cfRun(t, g, &f, nil, &g.AfterMore)
					if want := g.AfterMore.Replies; !reflect.DeepEqual(replies, want) {
						t.Fatalf("after more: replies differ from RedisBloom's at %s", cfFirstDiffAny(replies, want))
					}
					checkCFState(t, g, f, &g.AfterMore)
				})
			}
			loaders := map[string]func(t *testing.T) cfUnderTest{
				"chunks": func(t *testing.T) cfUnderTest {
					f, err := NewCuckooFromHeader(g.Chunks[0].Data, 0)
					if err != nil {
						t.Fatal(err)
					}
					for _, ch := range g.Chunks[1:] {
						if err := f.LoadChunk(ch.Iterator, ch.Data); err != nil {
							t.Fatal(err)
						}
					}
					return f
				},
				"atomic-chunks": func(t *testing.T) cfUnderTest {
					f, err := NewAtomicCuckooFromHeader(g.Chunks[0].Data, 0)
					if err != nil {
						t.Fatal(err)
					}
					for _, ch := range g.Chunks[1:] {
						if err := f.LoadChunk(ch.Iterator, ch.Data); err != nil {
							t.Fatal(err)
						}
					}
					return f
				},
				"rdb": func(t *testing.T) cfUnderTest {
					body, encver := cfDumpBody(t, g.DumpPayload)
					var f CuckooFilter
					if _, err := f.UnmarshalRDB(body, encver, 0); err != nil {
						t.Fatal(err)
					}
					return &f
				},
			}
			for _, how := range []string{"chunks", "atomic-chunks", "rdb"} {
				t.Run("loaded-"+how, func(t *testing.T) {
					if len(g.Chunks) == 0 {
						t.Skip("RedisBloom dumped no chunks: the filter had no items")
					}
					f := loaders[how](t)
					checkCFState(t, g, f, &g.cfGoldenRun)
					replies := cfRun(t, g, &f, nil, &g.AfterMore)
					if want := g.AfterMore.Replies; !reflect.DeepEqual(replies, want) {
						t.Fatalf("after more: replies differ from RedisBloom's at %s", cfFirstDiffAny(replies, want))
					}
					checkCFState(t, g, f, &g.AfterMore)
				})
			}
		})
	}
}

func cfFirstDiffAny(a, b []any) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("reply %d: %v, RedisBloom %v", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("the end: %d replies, RedisBloom %d", len(a), len(b))
}

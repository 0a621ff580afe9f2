package ohbloom

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// persisted is one kind of filter as the file functions see it: how to
// build and fill one, save it, load it back as each twin, and compare.
type persisted struct {
	name  string
	kind  Kind
	build func() io.WriterTo              // a filter with keys in it
	save  func(io.WriterTo, string) error // its Save
	loads map[string]func(string) (io.WriterTo, error)
}

func persistedKinds() []persisted {
	keys := func(add func(string)) {
		for i := range 3000 {
			add(fmt.Sprint("key-", i))
		}
	}
	return []persisted{
		{
			name: "Filter", kind: KindFilter,
			build: func() io.WriterTo { f := New(5000, 0.01); keys(f.AddString); return f },
			save:  func(f io.WriterTo, p string) error { return f.(*Filter).Save(p) },
			loads: map[string]func(string) (io.WriterTo, error){
				"Load":       func(p string) (io.WriterTo, error) { return Load(p) },
				"LoadAtomic": func(p string) (io.WriterTo, error) { return LoadAtomic(p) },
			},
		},
		{
			name: "AtomicFilter", kind: KindFilter,
			build: func() io.WriterTo { f := NewAtomic(5000, 0.01); keys(f.AddString); return f },
			save:  func(f io.WriterTo, p string) error { return f.(*AtomicFilter).Save(p) },
			loads: map[string]func(string) (io.WriterTo, error){
				"Load":       func(p string) (io.WriterTo, error) { return Load(p) },
				"LoadAtomic": func(p string) (io.WriterTo, error) { return LoadAtomic(p) },
			},
		},
		{
			name: "CountingFilter", kind: KindCounting,
			build: func() io.WriterTo { f := NewCounting(5000, 0.01); keys(f.AddString); return f },
			save:  func(f io.WriterTo, p string) error { return f.(*CountingFilter).Save(p) },
			loads: map[string]func(string) (io.WriterTo, error){
				"LoadCounting":       func(p string) (io.WriterTo, error) { return LoadCounting(p) },
				"LoadAtomicCounting": func(p string) (io.WriterTo, error) { return LoadAtomicCounting(p) },
			},
		},
		{
			name: "AtomicCountingFilter", kind: KindCounting,
			build: func() io.WriterTo { f := NewAtomicCounting(5000, 0.01); keys(f.AddString); return f },
			save:  func(f io.WriterTo, p string) error { return f.(*AtomicCountingFilter).Save(p) },
			loads: map[string]func(string) (io.WriterTo, error){
				"LoadCounting":       func(p string) (io.WriterTo, error) { return LoadCounting(p) },
				"LoadAtomicCounting": func(p string) (io.WriterTo, error) { return LoadAtomicCounting(p) },
			},
		},
		{
			name: "ScalableFilter", kind: KindScalable,
			build: func() io.WriterTo { f := NewScalable(500, 0.01); keys(f.AddString); return f },
			save:  func(f io.WriterTo, p string) error { return f.(*ScalableFilter).Save(p) },
			loads: map[string]func(string) (io.WriterTo, error){
				"LoadScalable":       func(p string) (io.WriterTo, error) { return LoadScalable(p) },
				"LoadAtomicScalable": func(p string) (io.WriterTo, error) { return LoadAtomicScalable(p) },
			},
		},
		{
			name: "AtomicScalableFilter", kind: KindScalable,
			build: func() io.WriterTo { f := NewAtomicScalable(500, 0.01); keys(f.AddString); return f },
			save:  func(f io.WriterTo, p string) error { return f.(*AtomicScalableFilter).Save(p) },
			loads: map[string]func(string) (io.WriterTo, error){
				"LoadScalable":       func(p string) (io.WriterTo, error) { return LoadScalable(p) },
				"LoadAtomicScalable": func(p string) (io.WriterTo, error) { return LoadAtomicScalable(p) },
			},
		},
	}
}

func encoding(t *testing.T, f io.WriterTo) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Every filter saves to a file that its kind's Load functions, for either
// twin, read back as the same filter, and that Inspect describes.
func TestSaveLoadEveryKind(t *testing.T) {
	dir := t.TempDir()
	for _, k := range persistedKinds() {
		f := k.build()
		path := filepath.Join(dir, k.name+".ohb")
		if err := k.save(f, path); err != nil {
			t.Fatalf("%s.Save: %v", k.name, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, encoding(t, f)) {
			t.Fatalf("%s.Save wrote other bytes than WriteTo", k.name)
		}
		for name, load := range k.loads {
			g, err := load(path)
			if err != nil {
				t.Fatalf("%s of a %s: %v", name, k.name, err)
			}
			if !bytes.Equal(encoding(t, g), data) {
				t.Fatalf("%s of a %s gives another filter", name, k.name)
			}
		}
		info, err := Inspect(path)
		if err != nil {
			t.Fatalf("Inspect of a %s: %v", k.name, err)
		}
		if info.Kind != k.kind || info.Size != int64(len(data)) {
			t.Fatalf("Inspect of a %s: kind %v, %d bytes; want %v, %d", k.name, info.Kind, info.Size, k.kind, len(data))
		}
	}
}

// A file read as another kind says what it holds and which call reads it,
// names the file once and says "ohbloom: " once; it wraps ErrUnknownKind,
// as the decoders' error does.
func TestLoadWrongKindSaysWhatReadsIt(t *testing.T) {
	dir := t.TempDir()
	files := map[Kind]string{}
	for _, k := range persistedKinds() {
		if _, ok := files[k.kind]; ok {
			continue
		}
		files[k.kind] = filepath.Join(dir, k.kind.String()+".ohb")
		if err := k.save(k.build(), files[k.kind]); err != nil {
			t.Fatal(err)
		}
	}
	reads := map[Kind]string{KindFilter: "Load, LoadAtomic or Open",
		KindCounting: "LoadCounting or LoadAtomicCounting", KindScalable: "LoadScalable or LoadAtomicScalable"}
	open := func(p string) (io.WriterTo, error) {
		s, err := Open(p)
		if err == nil {
			s.Close()
			return nil, nil
		}
		return nil, err
	}
	for _, k := range persistedKinds() {
		calls := map[string]func(string) (io.WriterTo, error){}
		for name, load := range k.loads {
			calls[name] = load
		}
		if k.kind == KindFilter {
			calls["Open"] = open
		}
		for name, call := range calls {
			for kind, path := range files {
				if kind == k.kind {
					continue
				}
				_, err := call(path)
				if !errors.Is(err, ErrUnknownKind) {
					t.Fatalf("%s of a %s file: %v, want ErrUnknownKind", name, kind, err)
				}
				msg := err.Error()
				want := fmt.Sprintf("holds %s, not %s: read it with %s", kindName(uint8(kind)), kindName(uint8(k.kind)), reads[kind])
				if !strings.Contains(msg, want) || strings.Count(msg, path) != 1 || strings.Count(msg, "ohbloom: ") != 1 {
					t.Errorf("%s of a %s file: %q, want %q, the path once and \"ohbloom: \" once", name, kind, msg, want)
				}
			}
		}
	}
}

// Every Load function refuses a damaged, cut, lengthened or foreign file
// with the sentinel that says why, naming the file once; so does Inspect.
func TestLoadDamagedFiles(t *testing.T) {
	dir := t.TempDir()
	for _, k := range persistedKinds() {
		data := encoding(t, k.build())
		write := func(name string, b []byte) string {
			p := filepath.Join(dir, k.name+"-"+name)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		flipped := bytes.Clone(data)
		flipped[len(flipped)/2] ^= 4
		cases := []struct {
			path string
			want error
		}{
			{write("flipped", flipped), ErrChecksum},
			{write("short", data[:len(data)-1]), ErrTruncated},
			{write("header", data[:100]), ErrTruncated},
			{write("long", append(bytes.Clone(data), 0)), ErrCorrupt},
			{write("foreign", bytes.Repeat([]byte("not a filter "), 20)), ErrNotFilter},
			{write("empty", nil), ErrTruncated},
			{filepath.Join(dir, "missing"), os.ErrNotExist},
		}
		calls := map[string]func(string) (io.WriterTo, error){}
		for name, load := range k.loads {
			calls[name] = load
		}
		calls["Inspect"] = func(p string) (io.WriterTo, error) { _, err := Inspect(p); return nil, err }
		for _, c := range cases {
			for name, call := range calls {
				g, err := call(c.path)
				if !errors.Is(err, c.want) {
					t.Fatalf("%s of %s: %v, want %v", name, filepath.Base(c.path), err, c.want)
				}
				if g != nil && !isNil(g) {
					t.Fatalf("%s of %s returned a filter with its error", name, filepath.Base(c.path))
				}
				msg := err.Error()
				if strings.Count(msg, c.path) != 1 || !strings.HasPrefix(msg, "ohbloom: ") || strings.Count(msg, "ohbloom: ") != 1 {
					t.Errorf("%s of %s: %q, want the path once and \"ohbloom: \" once", name, filepath.Base(c.path), msg)
				}
			}
		}
	}
}

// isNil reports whether w holds a nil pointer.
func isNil(w io.WriterTo) bool {
	switch f := w.(type) {
	case *Filter:
		return f == nil
	case *AtomicFilter:
		return f == nil
	case *CountingFilter:
		return f == nil
	case *AtomicCountingFilter:
		return f == nil
	case *ScalableFilter:
		return f == nil
	case *AtomicScalableFilter:
		return f == nil
	}
	return false
}

// Save of every kind goes through SaveFile: crash-safe, and a directory at
// the path is refused before anything is written.
func TestSaveEveryKindRefusesADirectory(t *testing.T) {
	dir := t.TempDir()
	for _, k := range persistedKinds() {
		sub := filepath.Join(dir, k.name)
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := k.save(k.build(), sub); err == nil || strings.Count(err.Error(), sub) != 1 {
			t.Errorf("%s.Save over a directory: %v, want an error naming it once", k.name, err)
		}
		if st, err := os.Stat(sub); err != nil || !st.IsDir() {
			t.Errorf("%s.Save over a directory changed it: %v", k.name, err)
		}
		left, _ := filepath.Glob(filepath.Join(dir, "."+k.name+".tmp-*"))
		if len(left) != 0 {
			t.Errorf("%s.Save left %v", k.name, left)
		}
	}
}

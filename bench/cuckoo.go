package bench

import (
	linvon "github.com/linvon/cuckoo-filter"
	"github.com/ohbloom/ohbloom/redisbloom"
	panmari "github.com/panmari/cuckoofilter"
	seiflotfy "github.com/seiflotfy/cuckoofilter"
)

// CuckooFilter is what the cuckoo comparisons need of every library.
type CuckooFilter interface {
	Add([]byte) bool
	Test([]byte) bool
	Bytes() uint64 // the filter's memory for its items
}

// CuckooPeer builds one library's filter, in one configuration, for n
// items.
type CuckooPeer struct {
	Name string
	New  func(n uint64) CuckooFilter
}

// CuckooPeers are the configurations compared. "rb-n" is ours as
// CF.RESERVE n makes it, with RedisBloom's defaults: RedisBloom's own
// memory for n items (bucket size 2 fills its first sub-filter only to
// 30-75% before kick-outs fail, so it grows to 2 sub-filters at 10^6 and 3
// at 10^8). "rb-2n-b4" is CF.RESERVE 2n BUCKETSIZE 4, one sub-filter. The
// peers' "-2n" (one-byte fingerprints) and "panmari-n" (two-byte)
// configurations take that sub-filter's memory, which is rb-n's at 10^6
// (2 MiB) and two thirds of it at 10^8 (256 MiB); their "-n"
// configurations are their own sizing for n items.
var CuckooPeers = []CuckooPeer{
	{"rb-n", func(n uint64) CuckooFilter { return newRB(n, 2, false) }},
	{"rb-n-atomic", func(n uint64) CuckooFilter { return newRB(n, 2, true) }},
	{"rb-2n-b4", func(n uint64) CuckooFilter { return newRB(2*n, 4, false) }},
	{"seiflotfy-2n", func(n uint64) CuckooFilter { return newSeiflotfy(2 * n) }},
	{"panmari-n", func(n uint64) CuckooFilter { return panmariCuckoo{panmari.NewFilter(uint(n))} }},
	{"linvon-2n", func(n uint64) CuckooFilter {
		return linvonCuckoo{linvon.NewFilter(4, 8, uint(2*n), linvon.TableTypeSingle)}
	}},
	{"seiflotfy-n", func(n uint64) CuckooFilter { return newSeiflotfy(n) }},
	{"linvon-n", func(n uint64) CuckooFilter {
		return linvonCuckoo{linvon.NewFilter(4, 8, uint(n), linvon.TableTypeSingle)}
	}},
}

func newRB(capacity uint64, bucketSize uint16, atomic bool) CuckooFilter {
	c := redisbloom.DefaultCuckooConfig(capacity)
	c.BucketSize = bucketSize
	if atomic {
		f, err := redisbloom.NewAtomicCuckoo(c)
		if err != nil {
			panic(err)
		}
		return rbAtomicCuckoo{f}
	}
	f, err := redisbloom.NewCuckoo(c)
	if err != nil {
		panic(err)
	}
	return rbCuckoo{f}
}

type rbCuckoo struct{ *redisbloom.CuckooFilter }

func (f rbCuckoo) Add(k []byte) bool { return f.CuckooFilter.Add(k) == nil }
func (f rbCuckoo) Bytes() uint64     { return f.Info().Size }

type rbAtomicCuckoo struct{ *redisbloom.AtomicCuckooFilter }

func (f rbAtomicCuckoo) Add(k []byte) bool { return f.AtomicCuckooFilter.Add(k) == nil }
func (f rbAtomicCuckoo) Bytes() uint64     { return f.Info().Size }

// seiflotfy/cuckoofilter: 4 one-byte fingerprints a bucket, nextPow2(n)
// slots.
type seiflotfyCuckoo struct {
	*seiflotfy.Filter
	bytes uint64
}

func newSeiflotfy(n uint64) CuckooFilter {
	slots := uint64(1)
	for slots < n {
		slots <<= 1
	}
	return seiflotfyCuckoo{seiflotfy.NewFilter(uint(n)), slots}
}

func (f seiflotfyCuckoo) Add(k []byte) bool  { return f.Insert(k) }
func (f seiflotfyCuckoo) Test(k []byte) bool { return f.Lookup(k) }
func (f seiflotfyCuckoo) Bytes() uint64      { return f.bytes }

// panmari/cuckoofilter: 4 two-byte fingerprints a bucket.
type panmariCuckoo struct{ *panmari.Filter }

func (f panmariCuckoo) Add(k []byte) bool  { return f.Insert(k) }
func (f panmariCuckoo) Test(k []byte) bool { return f.Lookup(k) }

// Bytes is its bucket array: Count / LoadFactor slots of 2 bytes.
func (f panmariCuckoo) Bytes() uint64 {
	return uint64(float64(f.Count())/f.LoadFactor()+0.5) * 2
}

// linvon/cuckoo-filter, at 4 one-byte fingerprints a bucket.
type linvonCuckoo struct{ *linvon.Filter }

func (f linvonCuckoo) Test(k []byte) bool { return f.Contain(k) }
func (f linvonCuckoo) Bytes() uint64      { return uint64(f.SizeInBytes()) }

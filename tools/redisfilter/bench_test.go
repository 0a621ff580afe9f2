package redisfilter

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ohbloom/ohbloom"
	"github.com/redis/go-redis/v9"
)

// roundTrips counts the client's trips to Redis: one per command, one per
// pipeline.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

// benchFilter is a filter for 10^6 keys at 1% in the test Redis, a counter
// of round trips, and keys to use.
func benchFilter(b *testing.B) (*Filter, *roundTrips, [][]byte) {
	rdb := redisClient(b)
	trips := &roundTrips{}
	rdb.AddHook(trips)
	f, err := Create(context.Background(), rdb, "bench", ohbloom.Config{Capacity: 1_000_000, FPR: 0.01}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return f, trips, keys("did:plc:", 1<<16)
}

func report(b *testing.B, trips *roundTrips, ops int) {
	b.ReportMetric(float64(trips.n.Load())/float64(ops), "roundtrips/op")
	b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "ops/s")
}

// Run with a Redis at OHBLOOM_REDIS_ADDR:
//
//	go test -run '^$' -bench . -benchtime 3s ./tools/redisfilter
func BenchmarkAdd(b *testing.B) {
	f, trips, ks := benchFilter(b)
	ctx := context.Background()
	trips.n.Store(0)
	b.ResetTimer()
	for i := range b.N {
		if _, err := f.Add(ctx, ks[i&(len(ks)-1)]); err != nil {
			b.Fatal(err)
		}
	}
	report(b, trips, b.N)
}

func BenchmarkTest(b *testing.B) {
	f, trips, ks := benchFilter(b)
	ctx := context.Background()
	f.AddBatch(ctx, ks[:1000], nil)
	trips.n.Store(0)
	b.ResetTimer()
	for i := range b.N {
		if _, err := f.Test(ctx, ks[i&(len(ks)-1)]); err != nil {
			b.Fatal(err)
		}
	}
	report(b, trips, b.N)
}

func BenchmarkAddBatch1000(b *testing.B) {
	f, trips, ks := benchFilter(b)
	ctx := context.Background()
	trips.n.Store(0)
	b.ResetTimer()
	for i := range b.N {
		start := i * 1000 % (len(ks) - 1000)
		if err := f.AddBatch(ctx, ks[start:start+1000], nil); err != nil {
			b.Fatal(err)
		}
	}
	report(b, trips, b.N*1000)
}

func BenchmarkTestBatch1000(b *testing.B) {
	f, trips, ks := benchFilter(b)
	ctx := context.Background()
	results := make([]bool, 1000)
	trips.n.Store(0)
	b.ResetTimer()
	for i := range b.N {
		start := i * 1000 % (len(ks) - 1000)
		if err := f.TestBatch(ctx, ks[start:start+1000], results); err != nil {
			b.Fatal(err)
		}
	}
	report(b, trips, b.N*1000)
}

// The batched forms take one round trip per batch, the single ones one per
// key: checked here rather than only reported by the benchmarks.
func TestRoundTrips(t *testing.T) {
	rdb := redisClient(t)
	trips := &roundTrips{}
	rdb.AddHook(trips)
	ctx := context.Background()
	f, err := Create(ctx, rdb, "trips", ohbloom.Config{Capacity: 10_000, FPR: 0.01}, Options{ShardBlocks: 16})
	if err != nil {
		t.Fatal(err)
	}
	ks := keys("k", 500)
	for _, c := range []struct {
		what string
		run  func()
		want int64
	}{
		{"Add", func() { f.Add(ctx, ks[0]) }, 1},
		{"Test", func() { f.Test(ctx, ks[0]) }, 1},
		{"AddBatch of 500", func() { f.AddBatch(ctx, ks, nil) }, 1},
		{"TestBatch of 500", func() { f.TestBatch(ctx, ks, make([]bool, len(ks))) }, 1},
	} {
		c.run() // the first use of a connection also says HELLO, SELECT, CLIENT SETINFO
		trips.n.Store(0)
		c.run()
		if got := trips.n.Load(); got != c.want {
			t.Errorf("%s: %d round trips, want %d", c.what, got, c.want)
		}
	}
}

func Example() {
	ctx := context.Background()
	// Deadlines that hold on a frozen node (see the package doc).
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1})
	defer rdb.Close()

	// Every replica opens the same filter by name; the first creates it.
	f, err := Create(ctx, rdb, "blocks", ohbloom.Config{Capacity: 10_000_000, FPR: 0.01}, Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	f.AddString(ctx, "did:plc:alice|did:plc:bob") // one BITFIELD, one round trip
	blocked, err := f.TestString(ctx, "did:plc:alice|did:plc:bob")
	fmt.Println(blocked, err)
}

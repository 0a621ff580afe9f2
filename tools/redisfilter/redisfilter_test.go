package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ohbloom/ohbloom"
	"github.com/redis/go-redis/v9"
)

// redisClient connects to the redis-server .ci/run starts, or to one the
// tests start themselves (redis_local_test.go), on a database of its own
// cleared for the test.
func redisClient(t testing.TB) *redis.Client {
	t.Helper()
	addr := redisAddr(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: 3,
		// Deadlines that hold (see the package doc); generous, since the
		// machine may be loaded, but bounded, so that no test hangs.
		ContextTimeoutEnabled: true, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxRetries: 1})
	if err := rdb.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func keys(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s%d", prefix, i)
	}
	return out
}

// The filter in Redis and a local filter built from the same keys hold the
// same bits: Download equals the local one, and no added key is missed.
func TestMatchesLocalFilter(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	c := ohbloom.Config{Capacity: 20_000, FPR: 0.01, Seed: 99}
	f, err := Create(ctx, rdb, "blocks", c, Options{ShardBlocks: 100})
	if err != nil {
		t.Fatal(err)
	}
	local, _ := ohbloom.NewWithConfig(c)
	if !local.Layout().Equal(f.Layout()) || f.Shards() < 2 {
		t.Fatalf("layout %d blocks in %d shards", f.Layout().Blocks(), f.Shards())
	}
	added := keys("did:plc:", 20_000)
	for i, k := range added[:200] { // one by one
		isNew, err := f.Add(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if local.TestAndAdd(k) == isNew {
			t.Fatalf("key %d: Redis says new=%v, the local filter disagrees", i, isNew)
		}
	}
	for i := 200; i < len(added); i += 1000 { // batched
		batch := added[i:min(i+1000, len(added))]
		if err := f.AddBatch(ctx, batch, nil); err != nil {
			t.Fatal(err)
		}
		local.AddBatch(batch)
	}
	got, err := f.Download(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(local) {
		t.Fatal("downloaded bits differ from a local filter of the same keys")
	}
	results := make([]bool, len(added))
	if err := f.TestBatch(ctx, added, results); err != nil {
		t.Fatal(err)
	}
	for i, ok := range results {
		if !ok {
			t.Fatalf("false negative for key %d", i)
		}
	}
	absent := keys("absent-", 20_000)
	if err := f.TestBatch(ctx, absent, results); err != nil {
		t.Fatal(err)
	}
	positives := 0
	for i, ok := range results {
		if ok != local.Test(absent[i]) {
			t.Fatalf("absent key %d: Redis %v, local %v", i, ok, !ok)
		}
		if ok {
			positives++
		}
	}
	if positives > 300 { // p = 1%: 200 expected, 300 is 7σ away
		t.Fatalf("%d false positives in 20000", positives)
	}
	if ok, err := f.TestString(ctx, "did:plc:7"); err != nil || !ok {
		t.Fatalf("TestString: %v %v", ok, err)
	}
}

// A snapshot built offline is published to Redis and used there; keys
// added in Redis come back with Download; Upload keeps them.
func TestUploadDownloadSnapshot(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	offline := ohbloom.New(50_000, 0.001)
	offline.AddBatch(keys("old-", 50_000))
	f, err := CreateFrom(ctx, rdb, "snap", offline, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys("new-", 100) {
		f.Add(ctx, k)
	}
	if err := f.Upload(ctx, offline); err != nil { // again, after the adds
		t.Fatal(err)
	}
	back, err := f.Download(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := offline.Clone()
	want.AddBatch(keys("new-", 100))
	if !back.Equal(want) {
		t.Fatal("download is not the snapshot plus the keys added in Redis")
	}
	if n, _ := rdb.Exists(ctx, f.shardKey(0)+":upload").Result(); n != 0 {
		t.Fatal("Upload left its temporary key")
	}
	// Another process opens it by name.
	g, err := Open(ctx, rdb, "snap")
	if err != nil || !g.Layout().Equal(offline.Layout()) {
		t.Fatalf("Open: %v", err)
	}
	if ok, _ := g.TestString(ctx, "old-123"); !ok {
		t.Fatal("an uploaded key is missing")
	}
	other := ohbloom.New(10, 0.5)
	if err := g.Upload(ctx, other); !errors.Is(err, ohbloom.ErrIncompatible) {
		t.Fatalf("uploading another layout: %v", err)
	}
	if err := g.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.DBSize(ctx).Result(); n != 0 {
		t.Fatalf("%d keys left after Delete", n)
	}
}

func TestCreateOpenErrors(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	c := ohbloom.Config{Capacity: 1000, FPR: 0.01}
	if _, err := Create(ctx, rdb, "f", c, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(ctx, rdb, "f", c, Options{}); err != nil {
		t.Fatalf("creating the same filter again: %v", err)
	}
	if _, err := Create(ctx, rdb, "f", ohbloom.Config{Capacity: 1000, FPR: 0.001}, Options{}); !errors.Is(err, ErrExists) {
		t.Fatalf("creating a different filter by the same name: %v", err)
	}
	if _, err := Open(ctx, rdb, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open of a missing filter: %v", err)
	}
	if _, err := Create(ctx, rdb, "g", ohbloom.Config{Capacity: 10, FPR: 2}, Options{}); !errors.Is(err, ohbloom.ErrInvalidConfig) {
		t.Fatalf("FPR 2: %v", err)
	}
	for _, bad := range []string{"garbage", "ohbloom-redis v1 blocks=10 k=99 seed=0 shard_blocks=5 capacity=0 fpr=0",
		"ohbloom-redis v1 blocks=10 k=7 seed=0 shard_blocks=0 capacity=0 fpr=0", "ohbloom-redis v2 a b c d e f"} {
		rdb.Set(ctx, metaKey("bad"), bad, 0)
		if _, err := Open(ctx, rdb, "bad"); !errors.Is(err, ErrMeta) {
			t.Fatalf("meta %q: %v", bad, err)
		}
	}
	// A shard longer than the filter allows is someone else's data.
	f, _ := Create(ctx, rdb, "long", ohbloom.Config{Blocks: 4, K: 7}, Options{})
	rdb.Set(ctx, f.shardKey(0), strings.Repeat("x", 5*64), 0)
	if _, err := f.Download(ctx); !errors.Is(err, ErrMeta) {
		t.Fatalf("download of an overlong shard: %v", err)
	}
}

// With Redis unreachable every call returns an error quickly; none panics.
func TestRedisUnreachable(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	ctx := context.Background()
	if _, err := Create(ctx, rdb, "f", ohbloom.Config{Capacity: 100, FPR: 0.01}, Options{}); err == nil {
		t.Fatal("Create without Redis succeeded")
	}
	if _, err := Open(ctx, rdb, "f"); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("Open without Redis: %v", err)
	}
	layout, _ := ohbloom.NewLayout(ohbloom.Config{Capacity: 100, FPR: 0.01})
	f := &Filter{rdb: rdb, name: "f", layout: layout, shardBlocks: DefaultShardBlocks}
	if _, err := f.AddString(ctx, "k"); err == nil {
		t.Fatal("Add without Redis succeeded")
	}
	if ok, err := f.TestString(ctx, "k"); err == nil || ok {
		t.Fatalf("Test without Redis: %v %v", ok, err)
	}
	if err := f.AddBatch(ctx, keys("k", 10), nil); err == nil {
		t.Fatal("AddBatch without Redis succeeded")
	}
	if err := f.TestBatch(ctx, keys("k", 10), make([]bool, 10)); err == nil {
		t.Fatal("TestBatch without Redis succeeded")
	}
	if _, err := f.Download(ctx); err == nil {
		t.Fatal("Download without Redis succeeded")
	}
}

// On a three-node Redis Cluster every command touches one key, the shards
// spread over the nodes, and the filter answers as a local one.
func TestOnRedisCluster(t *testing.T) {
	addrs := clusterAddr(t)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","),
		ContextTimeoutEnabled: true, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxRetries: 1})
	defer cc.Close()
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		return c.FlushDB(ctx).Err()
	}); err != nil {
		t.Fatal(err)
	}
	offline := ohbloom.New(30_000, 0.01)
	offline.AddBatch(keys("old-", 30_000))
	f, err := CreateFrom(ctx, cc, "fleet", offline, Options{ShardBlocks: 64})
	if err != nil {
		t.Fatal(err)
	}
	fresh := keys("new-", 5000)
	if err := f.AddBatch(ctx, fresh, nil); err != nil {
		t.Fatal(err)
	}
	want := offline.Clone()
	want.AddBatch(fresh)
	got, err := f.Download(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want) {
		t.Fatal("the cluster's bits differ from a local filter of the same keys")
	}
	results := make([]bool, len(fresh))
	if err := f.TestBatch(ctx, fresh, results); err != nil {
		t.Fatal(err)
	}
	for i, ok := range results {
		if !ok {
			t.Fatalf("false negative for new key %d", i)
		}
	}
	var nodesUsed atomic.Int32 // ForEachMaster visits the nodes concurrently
	cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		if n, _ := c.DBSize(ctx).Result(); n > 0 {
			nodesUsed.Add(1)
		}
		return nil
	})
	if f.Shards() < 10 || nodesUsed.Load() < 2 {
		t.Fatalf("%d shards on %d nodes: they should spread", f.Shards(), nodesUsed.Load())
	}

	// Names with braces spread too: a name's '}' would end a hash tag
	// that began with it.
	for _, name := range []string{"a}b", "{x}", "}", "{"} {
		g, err := CreateFrom(ctx, cc, name, offline, Options{ShardBlocks: 64})
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		nodes := map[string]bool{}
		slots := map[int64]bool{}
		for shard := range g.Shards() {
			slot, err := cc.ClusterKeySlot(ctx, g.shardKey(shard)).Result()
			if err != nil {
				t.Fatal(err)
			}
			slots[slot] = true
			node, err := cc.MasterForKey(ctx, g.shardKey(shard))
			if err != nil {
				t.Fatal(err)
			}
			nodes[node.Options().Addr] = true
		}
		if len(slots) < int(g.Shards())/2 || len(nodes) < 2 {
			t.Errorf("filter %q: %d shards in %d slots on %d nodes", name, g.Shards(), len(slots), len(nodes))
		}
		if back, err := g.Download(ctx); err != nil || !back.Equal(offline) {
			t.Errorf("filter %q: download %v", name, err)
		}
	}
}

// hashTag returns the part of key Redis Cluster hashes: the bytes between
// the first '{' and the first '}' after it, when there are some; else the
// whole key (cluster spec, "Hash tags").
func hashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

// Every shard of a filter has its own hash tag whatever its name holds,
// and its Upload's temporary key shares its shard's tag.
func TestShardKeysHaveTheirOwnTags(t *testing.T) {
	layout, err := ohbloom.NewLayout(ohbloom.Config{Capacity: 100_000, FPR: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"blocks", "a}b", "{x}", "}", "{", "", "a{b}c", "}}{{", "x:1"} {
		f := &Filter{name: name, layout: layout, shardBlocks: 16}
		tags := map[string]uint64{}
		for shard := range f.Shards() {
			key := f.shardKey(shard)
			tag := hashTag(key)
			if other, dup := tags[tag]; dup {
				t.Fatalf("name %q: shards %d and %d share the hash tag %q", name, other, shard, tag)
			}
			tags[tag] = shard
			if hashTag(key+":upload") != tag {
				t.Fatalf("name %q: Upload's temporary key is not in its shard's slot", name)
			}
		}
	}
}

// Options.ShardBlocks beyond what a Redis string holds is refused at
// Create, and in a stored description.
func TestShardBlocksLimit(t *testing.T) {
	l, _ := ohbloom.NewLayout(ohbloom.Config{Blocks: 1 << 30, K: 7})
	if _, _, err := parseMeta(describe(l, MaxShardBlocks)); err != nil {
		t.Fatalf("shards of MaxShardBlocks: %v", err)
	}
	if _, _, err := parseMeta(describe(l, MaxShardBlocks+1)); !errors.Is(err, ErrMeta) {
		t.Fatalf("a description with shards past 512 MiB: %v", err)
	}
	if MaxShardBlocks*ohbloom.BlockBytes != 512<<20 {
		t.Fatalf("MaxShardBlocks = %d", MaxShardBlocks)
	}
	// Create refuses before it talks to Redis: no server is needed.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	_, err := Create(context.Background(), rdb, "f", ohbloom.Config{Blocks: 1 << 30, K: 7}, Options{ShardBlocks: MaxShardBlocks + 1})
	if !errors.Is(err, ohbloom.ErrInvalidConfig) || !strings.Contains(err.Error(), "512 MiB") {
		t.Fatalf("ShardBlocks past 512 MiB: %v", err)
	}
}

// A filter larger than this machine's memory is created, used and opened:
// its bits live in Redis. Only Download, which would hold them here, is
// refused.
func TestFilterLargerThanLocalMemory(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	t.Cleanup(func() { rdb.FlushDB(context.Background()) })
	// MaxBlocks blocks are 256 GiB: more than any machine this runs on.
	c := ohbloom.Config{Blocks: ohbloom.MaxBlocks, K: 7}
	if _, err := ohbloom.NewWithConfig(c); !errors.Is(err, ohbloom.ErrTooLarge) {
		t.Skipf("this machine could hold 256 GiB (%v): the test needs a smaller one", err)
	}
	f, err := Create(ctx, rdb, "huge", c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys("k", 20) {
		if _, err := f.Add(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	g, err := Open(ctx, rdb, "huge")
	if err != nil || !g.Layout().Equal(f.Layout()) {
		t.Fatalf("Open: %v", err)
	}
	for _, k := range keys("k", 20) {
		if ok, err := g.Test(ctx, k); err != nil || !ok {
			t.Fatalf("Test(%s): %v %v", k, ok, err)
		}
	}
	if _, err := g.Download(ctx); !errors.Is(err, ohbloom.ErrTooLarge) {
		t.Fatalf("Download of 256 GiB: %v", err)
	}
}

// blackHole is a frozen Redis node: it accepts connections and never
// answers. It returns its address and how many connections it took.
func blackHole(t *testing.T) (string, *atomic.Int32) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			conns.Add(1)
			held = append(held, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String(), &conns
}

// With the options the package doc names, a call to a frozen node ends
// with its context's deadline, with an error, and is not retried. The
// client's own ReadTimeout is a minute, so a call that did not heed the
// deadline would show it plainly.
func TestDeadlineHoldsOnFrozenNode(t *testing.T) {
	addr, conns := blackHole(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute, MaxRetries: -1})
	defer rdb.Close()
	layout, _ := ohbloom.NewLayout(ohbloom.Config{Capacity: 1000, FPR: 0.01})
	f := &Filter{rdb: rdb, name: "f", layout: layout, shardBlocks: DefaultShardBlocks}
	calls := []struct {
		name string
		call func(context.Context) error
	}{
		{"Add", func(ctx context.Context) error { _, err := f.AddString(ctx, "k"); return err }},
		{"Test", func(ctx context.Context) error { _, err := f.TestString(ctx, "k"); return err }},
		{"AddBatch", func(ctx context.Context) error { return f.AddBatch(ctx, keys("k", 10), nil) }},
		{"TestBatch", func(ctx context.Context) error { return f.TestBatch(ctx, keys("k", 10), make([]bool, 10)) }},
		{"Open", func(ctx context.Context) error { _, err := Open(ctx, rdb, "f"); return err }},
	}
	for _, c := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		err := c.call(ctx)
		took := time.Since(start)
		cancel()
		if err == nil {
			t.Fatalf("%s on a frozen node succeeded", c.name)
		}
		var ne net.Error
		if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout()) {
			t.Errorf("%s: %v, want a deadline error", c.name, err)
		}
		// Far below the client's one-minute ReadTimeout, far above the
		// deadline: a bound that no load makes flaky.
		if took > 30*time.Second {
			t.Errorf("%s took %v with a 100 ms deadline", c.name, took)
		}
	}
	if conns.Load() == 0 {
		t.Fatal("the client never reached the frozen node")
	}
}

// The description comes from Redis, where anyone with access may have
// written anything: parseMeta returns an error or a layout it can write
// back identically, never a panic, and never a shard size Redis cannot hold.
func FuzzParseMeta(f *testing.F) {
	l, _ := ohbloom.NewLayout(ohbloom.Config{Capacity: 1_000_000, FPR: 0.01, Seed: 7})
	f.Add(describe(l, DefaultShardBlocks))
	f.Add("ohbloom-redis v2 blocks=10 k=7 seed=0 shard_blocks=5 capacity=0 fpr=0")
	f.Add("ohbloom-redis v2 blocks=4294967296 k=16 seed=18446744073709551615 shard_blocks=8388608 capacity=1 fpr=NaN")
	f.Add("ohbloom-redis v1 blocks=10 k=7 seed=0 shard_blocks=5 capacity=0 fpr=0")
	f.Fuzz(func(t *testing.T, s string) {
		l, shard, err := parseMeta(s)
		if err != nil {
			if !errors.Is(err, ErrMeta) {
				t.Fatalf("%q: %v does not wrap ErrMeta", s, err)
			}
			return
		}
		if shard == 0 || shard > MaxShardBlocks || shard > l.Blocks() {
			t.Fatalf("%q: shard_blocks %d accepted", s, shard)
		}
		again, shard2, err := parseMeta(describe(l, shard))
		if err != nil || !again.Equal(l) || shard2 != shard {
			t.Fatalf("%q: written back as %q: %v", s, describe(l, shard), err)
		}
	})
}

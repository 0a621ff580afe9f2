package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ohbloom/ohbloom"
	"github.com/redis/go-redis/v9"
)

// redisClient connects to the redis-server .ci/run starts, on a database of
// its own cleared for the test. Outside CI, without OHBLOOM_REDIS_ADDR, the
// test is skipped; in CI its absence is a failure.
func redisClient(t testing.TB) *redis.Client {
	t.Helper()
	addr := os.Getenv("OHBLOOM_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must set OHBLOOM_REDIS_ADDR (.ci/run starts redis-server)")
		}
		t.Skip("OHBLOOM_REDIS_ADDR is not set")
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: 3})
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
	addrs := os.Getenv("OHBLOOM_REDIS_CLUSTER")
	if addrs == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must set OHBLOOM_REDIS_CLUSTER (.ci/run starts a Redis Cluster)")
		}
		t.Skip("OHBLOOM_REDIS_CLUSTER is not set")
	}
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
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
}

// Package redisfilter keeps a one-hash blocked Bloom filter's bits in Redis,
// so that a fleet of stateless replicas shares one filter.
//
// The bits are laid out exactly as ohbloom lays them out in memory and in
// its files: block i of the filter is bytes [64·(i mod S), 64·(i mod S)+64)
// of shard i/S, a Redis string, where S is the blocks per shard. A key
// lives in one block, so an Add is one BITFIELD command setting its k bits
// and a Test is one GETRANGE of its 64 bytes, each one round trip; the
// batched forms pipeline many keys into one round trip. Upload and
// Download move whole filters between Redis and an ohbloom.Filter, so a
// snapshot built offline can be published to Redis, and Redis's bits can
// be served locally.
//
// Every command touches one key, and each shard's key carries its own hash
// tag, ohbloom:{i:NAME}, so the filter works on Redis Cluster and its
// shards spread over the cluster's nodes, whatever characters NAME holds.
// A filter has Blocks/ShardBlocks shards: 3 for 10^6 keys at 1% with the
// default shard size, so only large filters, or smaller shards, spread
// over many nodes (see Options.ShardBlocks).
//
// The bits live in Redis, not here: a filter larger than this machine's
// memory can be created and used; only Download needs the memory.
//
// Deadlines: go-redis ignores the context's deadline on the network unless
// the client is made with ContextTimeoutEnabled, and retries a timed-out
// command MaxRetries times (3 by default), each waiting ReadTimeout (5 s by
// default), so a call to a frozen node can take tens of seconds whatever
// its context says. For calls that end by their deadline, set
//
//	redis.Options{ContextTimeoutEnabled: true, ReadTimeout: t, WriteTimeout: t, MaxRetries: -1 or small}
//
// (the same fields exist on redis.ClusterOptions); see docs/redisfilter.md.
package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/ohbloom/ohbloom"
	"github.com/redis/go-redis/v9"
)

// DefaultShardBlocks is the blocks per shard when Options leaves it 0:
// 8192 blocks, 512 KiB strings, small enough to move and replicate
// smoothly and to spread a large filter over a cluster.
const DefaultShardBlocks = 8192

// MaxShardBlocks is the most blocks a shard can hold: a Redis string holds
// at most 512 MiB (and BITFIELD addresses at most 2^32 bits of it).
const MaxShardBlocks = 512 << 20 / ohbloom.BlockBytes

// Options tune how a filter is stored.
type Options struct {
	// ShardBlocks is the number of 64-byte blocks per Redis string, 1 to
	// MaxShardBlocks; 0 means DefaultShardBlocks. A filter has
	// Blocks/ShardBlocks shards (rounded up), and a cluster can spread no
	// more than that over its nodes: for a filter to use N nodes evenly,
	// give it several times N shards. Smaller shards also move and
	// replicate more smoothly; larger ones mean fewer keys in Redis.
	ShardBlocks uint64
}

// Errors wrapped by the functions of this package.
var (
	ErrNotFound = errors.New("redisfilter: no filter by that name")
	ErrExists   = errors.New("redisfilter: a different filter by that name exists")
	ErrMeta     = errors.New("redisfilter: unreadable filter description")
)

// Filter is a filter whose bits live in Redis. It holds no bits itself and
// is safe for concurrent use: Redis runs each command atomically.
type Filter struct {
	rdb         redis.Cmdable
	name        string
	layout      ohbloom.Layout
	shardBlocks uint64
}

func metaKey(name string) string { return "ohbloom:{" + name + "}:meta" }

// shardKey names a shard. Redis Cluster hashes only a key's tag, the
// bytes from its first '{' to the next '}': the shard number comes first
// in it, so every shard has its own tag even when the name holds braces
// ("a}b" would otherwise give every shard the tag "a", one slot).
func (f *Filter) shardKey(shard uint64) string {
	return "ohbloom:{" + strconv.FormatUint(shard, 10) + ":" + f.name + "}"
}

// describe is the meta key's value: everything needed to place keys.
func describe(l ohbloom.Layout, shardBlocks uint64) string {
	return fmt.Sprintf("ohbloom-redis v2 blocks=%d k=%d seed=%d shard_blocks=%d capacity=%d fpr=%s",
		l.Blocks(), l.K(), l.Seed(), shardBlocks, l.Capacity(), strconv.FormatFloat(l.TargetFPR(), 'g', -1, 64))
}

func parseMeta(s string) (ohbloom.Layout, uint64, error) {
	fields := strings.Fields(s)
	// v1 named shards ohbloom:{NAME:i}; its shards are not where v2
	// looks, so reading one as v2 would answer "absent" for every key.
	if len(fields) != 8 || fields[0] != "ohbloom-redis" || fields[1] != "v2" {
		return ohbloom.Layout{}, 0, fmt.Errorf("%w: %.80q", ErrMeta, s)
	}
	v := map[string]string{}
	for _, f := range fields[2:] {
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			return ohbloom.Layout{}, 0, fmt.Errorf("%w: field %q", ErrMeta, f)
		}
		v[name] = value
	}
	var c ohbloom.Config
	var k, shard uint64
	var errs []error
	num := func(name string) uint64 {
		n, err := strconv.ParseUint(v[name], 10, 64)
		errs = append(errs, err)
		return n
	}
	c.Blocks, k, c.Seed, shard, c.Capacity = num("blocks"), num("k"), num("seed"), num("shard_blocks"), num("capacity")
	var err error
	c.FPR, err = strconv.ParseFloat(v["fpr"], 64)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return ohbloom.Layout{}, 0, fmt.Errorf("%w: %v", ErrMeta, err)
	}
	if k > 16 || shard == 0 || shard > c.Blocks || shard > MaxShardBlocks {
		return ohbloom.Layout{}, 0, fmt.Errorf("%w: k=%d shard_blocks=%d", ErrMeta, k, shard)
	}
	c.K = int(k)
	l, err := ohbloom.NewLayout(c)
	if err != nil {
		return ohbloom.Layout{}, 0, fmt.Errorf("%w: %v", ErrMeta, err)
	}
	return l, shard, nil
}

// Create makes an empty filter named name, sized by c as ohbloom.NewWithConfig
// sizes one (set c.Seed or c.RandomSeed as for a local filter), or opens it
// if a filter of exactly that layout exists. A different filter by that
// name is ErrExists. Nothing is allocated in Redis until keys are added:
// shards grow as their blocks are written.
func Create(ctx context.Context, rdb redis.Cmdable, name string, c ohbloom.Config, o Options) (*Filter, error) {
	l, err := ohbloom.NewLayout(c)
	if err != nil {
		return nil, err
	}
	return create(ctx, rdb, name, l, o)
}

func create(ctx context.Context, rdb redis.Cmdable, name string, l ohbloom.Layout, o Options) (*Filter, error) {
	if o.ShardBlocks == 0 {
		o.ShardBlocks = DefaultShardBlocks
	}
	if o.ShardBlocks > MaxShardBlocks {
		return nil, fmt.Errorf("redisfilter: create %q: %w: ShardBlocks = %d, at most %d (a Redis string holds 512 MiB)",
			name, ohbloom.ErrInvalidConfig, o.ShardBlocks, MaxShardBlocks)
	}
	o.ShardBlocks = min(o.ShardBlocks, l.Blocks())
	desc := describe(l, o.ShardBlocks)
	set, err := rdb.SetNX(ctx, metaKey(name), desc, 0).Result()
	if err != nil {
		return nil, fmt.Errorf("redisfilter: create %q: %w", name, err)
	}
	if !set {
		f, err := Open(ctx, rdb, name)
		if err != nil {
			return nil, err
		}
		if !f.layout.Equal(l) || f.shardBlocks != o.ShardBlocks {
			return nil, fmt.Errorf("%w: %q is %s", ErrExists, name, describe(f.layout, f.shardBlocks))
		}
		return f, nil
	}
	return &Filter{rdb: rdb, name: name, layout: l, shardBlocks: o.ShardBlocks}, nil
}

// Open returns the filter named name, or ErrNotFound.
func Open(ctx context.Context, rdb redis.Cmdable, name string) (*Filter, error) {
	desc, err := rdb.Get(ctx, metaKey(name)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("redisfilter: open %q: %w", name, err)
	}
	l, shard, err := parseMeta(desc)
	if err != nil {
		return nil, fmt.Errorf("redisfilter: open %q: %w", name, err)
	}
	return &Filter{rdb: rdb, name: name, layout: l, shardBlocks: shard}, nil
}

// Layout returns where the filter puts keys; a local filter built from
// Layout().Config() is compatible with it bit for bit.
func (f *Filter) Layout() ohbloom.Layout { return f.layout }

// Name returns the filter's name.
func (f *Filter) Name() string { return f.name }

// Shards returns the number of Redis strings holding the bits.
func (f *Filter) Shards() uint64 { return (f.layout.Blocks() + f.shardBlocks - 1) / f.shardBlocks }

// place returns the shard of block index and the block's byte offset in it.
func (f *Filter) place(index uint64) (string, int64) {
	return f.shardKey(index / f.shardBlocks), int64(index%f.shardBlocks) * ohbloom.BlockBytes
}

// bitfieldArgs turns a mask into BITFIELD SET operations. BITFIELD counts a
// string's bits from the most significant bit of its first byte; ohbloom's
// encoding has bit j of a byte at value 1<<j, so bit j of byte b is Redis
// bit 8b + 7 − j.
func bitfieldArgs(offset int64, mask *[ohbloom.BlockBytes]byte) []any {
	args := make([]any, 0, 4*16)
	for b, m := range mask {
		for ; m != 0; m &= m - 1 {
			j := int64(bits.TrailingZeros8(m))
			args = append(args, "SET", "u1", (offset+int64(b))*8+7-j, 1)
		}
	}
	return args
}

// AddHash adds the key whose hash (Layout().Hash) is h, in one BITFIELD,
// and reports whether the key was new: whether any of its bits was clear.
func (f *Filter) AddHash(ctx context.Context, h uint64) (bool, error) {
	cmd := f.addCmd(ctx, f.rdb, h)
	return wasNew(cmd)
}

func (f *Filter) addCmd(ctx context.Context, p redis.Cmdable, h uint64) *redis.IntSliceCmd {
	index, mask := f.layout.BlockMask(h)
	key, offset := f.place(index)
	return p.BitField(ctx, key, bitfieldArgs(offset, &mask)...)
}

func wasNew(cmd *redis.IntSliceCmd) (bool, error) {
	old, err := cmd.Result()
	if err != nil {
		return false, fmt.Errorf("redisfilter: add: %w", err)
	}
	for _, bit := range old {
		if bit == 0 {
			return true, nil
		}
	}
	return false, nil
}

// Add adds key and reports whether it was new.
func (f *Filter) Add(ctx context.Context, key []byte) (bool, error) {
	return f.AddHash(ctx, ohbloom.Hash(f.layout.Seed(), key))
}

// AddString is Add for a string key.
func (f *Filter) AddString(ctx context.Context, key string) (bool, error) {
	return f.AddHash(ctx, ohbloom.HashString(f.layout.Seed(), key))
}

// TestHash reports whether the key whose hash is h may be in the filter,
// reading its one block with GETRANGE.
func (f *Filter) TestHash(ctx context.Context, h uint64) (bool, error) {
	cmd, mask := f.testCmd(ctx, f.rdb, h)
	return contains(cmd, mask)
}

func (f *Filter) testCmd(ctx context.Context, p redis.Cmdable, h uint64) (*redis.StringCmd, [ohbloom.BlockBytes]byte) {
	index, mask := f.layout.BlockMask(h)
	key, offset := f.place(index)
	return p.GetRange(ctx, key, offset, offset+ohbloom.BlockBytes-1), mask
}

func contains(cmd *redis.StringCmd, mask [ohbloom.BlockBytes]byte) (bool, error) {
	block, err := cmd.Bytes()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("redisfilter: test: %w", err)
	}
	return ohbloom.ContainsMask(block, &mask), nil
}

// Test reports whether key may be in the filter.
func (f *Filter) Test(ctx context.Context, key []byte) (bool, error) {
	return f.TestHash(ctx, ohbloom.Hash(f.layout.Seed(), key))
}

// TestString is Test for a string key.
func (f *Filter) TestString(ctx context.Context, key string) (bool, error) {
	return f.TestHash(ctx, ohbloom.HashString(f.layout.Seed(), key))
}

// AddBatch adds keys in one pipelined round trip (one per node on a
// cluster). isNew, when not nil, receives whether each key was new. On
// error some keys may have been added and others not; adding them again
// is harmless.
func (f *Filter) AddBatch(ctx context.Context, keys [][]byte, isNew []bool) error {
	cmds := make([]*redis.IntSliceCmd, len(keys))
	_, err := f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = f.addCmd(ctx, p, ohbloom.Hash(f.layout.Seed(), k))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisfilter: add batch: %w", err)
	}
	for i, cmd := range cmds {
		n, err := wasNew(cmd)
		if err != nil {
			return err
		}
		if isNew != nil {
			isNew[i] = n
		}
	}
	return nil
}

// TestBatch tests keys in one pipelined round trip, writing results[i] for
// keys[i]; results must be as long as keys.
func (f *Filter) TestBatch(ctx context.Context, keys [][]byte, results []bool) error {
	if len(results) < len(keys) {
		return fmt.Errorf("redisfilter: test batch: %d results for %d keys", len(results), len(keys))
	}
	cmds := make([]*redis.StringCmd, len(keys))
	masks := make([][ohbloom.BlockBytes]byte, len(keys))
	_, err := f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i], masks[i] = f.testCmd(ctx, p, ohbloom.Hash(f.layout.Seed(), k))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisfilter: test batch: %w", err)
	}
	for i, cmd := range cmds {
		if results[i], err = contains(cmd, masks[i]); err != nil {
			return err
		}
	}
	return nil
}

// Upload ORs the bits of local into the filter, shard by shard, so that
// every key of local tests positive in Redis; keys added to Redis
// meanwhile are kept. Each shard is written atomically (SET of a temporary
// key in the shard's hash slot, BITOP OR, DEL, in one MULTI). local must
// have the filter's layout.
func (f *Filter) Upload(ctx context.Context, local *ohbloom.Filter) error {
	if !local.Layout().Equal(f.layout) {
		return fmt.Errorf("redisfilter: upload to %q: %w", f.name, ohbloom.ErrIncompatible)
	}
	var buf []byte
	for shard := range f.Shards() {
		first := shard * f.shardBlocks
		n := min(f.shardBlocks, f.layout.Blocks()-first)
		buf = local.AppendBlocks(buf[:0], first, n)
		key := f.shardKey(shard)
		tmp := key + ":upload"
		_, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, tmp, buf, 0)
			p.BitOpOr(ctx, key, key, tmp)
			p.Del(ctx, tmp)
			return nil
		})
		if err != nil {
			return fmt.Errorf("redisfilter: upload to %q, shard %d: %w", f.name, shard, err)
		}
	}
	return nil
}

// Download returns a local copy of the filter's bits, read shard by shard.
// Keys added during the download may or may not be in it.
func (f *Filter) Download(ctx context.Context) (*ohbloom.Filter, error) {
	local, err := ohbloom.NewWithConfig(f.layout.Config())
	if err != nil {
		return nil, err
	}
	for shard := range f.Shards() {
		data, err := f.rdb.Get(ctx, f.shardKey(shard)).Bytes()
		if errors.Is(err, redis.Nil) {
			continue // never written: all zeros
		}
		if err != nil {
			return nil, fmt.Errorf("redisfilter: download %q, shard %d: %w", f.name, shard, err)
		}
		first := shard * f.shardBlocks
		// A shard is as long as its last written block; a longer one is
		// not this filter's.
		if limit := min(f.shardBlocks, f.layout.Blocks()-first) * ohbloom.BlockBytes; uint64(len(data)) > limit {
			return nil, fmt.Errorf("%w: shard %d of %q holds %d bytes, at most %d", ErrMeta, shard, f.name, len(data), limit)
		}
		whole := len(data) / ohbloom.BlockBytes * ohbloom.BlockBytes
		if whole < len(data) {
			data = append(data, make([]byte, ohbloom.BlockBytes-(len(data)-whole))...)
		}
		if err := local.OrBlocks(first, data); err != nil {
			return nil, err
		}
	}
	return local, nil
}

// CreateFrom creates a filter named name with local's layout and uploads
// local's bits: publishing a filter built offline.
func CreateFrom(ctx context.Context, rdb redis.Cmdable, name string, local *ohbloom.Filter, o Options) (*Filter, error) {
	f, err := create(ctx, rdb, name, local.Layout(), o)
	if err != nil {
		return nil, err
	}
	return f, f.Upload(ctx, local)
}

// Delete removes the filter's description and shards from Redis.
func (f *Filter) Delete(ctx context.Context) error {
	keys := []string{metaKey(f.name)}
	for shard := range f.Shards() {
		keys = append(keys, f.shardKey(shard))
	}
	// One key per DEL, so that no command spans hash slots on a cluster.
	_, err := f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Del(ctx, k)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisfilter: delete %q: %w", f.name, err)
	}
	return nil
}

package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ohbloom/ohbloom/internal/redisbloomtest"
	"github.com/redis/go-redis/v9"
)

// Cuckoo filters the real RedisBloom module made (../shared/testdata/
// redisbloom/cf, README.md beside it), replayed through the server over a
// socket in both protocols: each script, command by command, gives
// RedisBloom's replies ("Filter is full" included), then the key's
// CF.SCANDUMP chunks, CF.INFO, false positives among the absent probes and
// CF.COUNTs are RedisBloom's; the second script reaches its second state
// the same way. A fresh key loaded from the first state's chunks answers
// the same and, given the second script, reaches the second state byte
// for byte.

// cfReplyForm turns a reply into the files' form: an integer (a RESP3
// boolean is 1 or 0), or "ERR:" and the message without a leading "ERR "
// (as redis-py, which recorded them, gives it).
func cfReplyForm(v any, err error) any {
	if err != nil && !errors.Is(err, redis.Nil) {
		return "ERR:" + strings.TrimPrefix(err.Error(), "ERR ")
	}
	switch v := v.(type) {
	case bool:
		if v {
			return 1
		}
		return 0
	case int64:
		return int(v)
	case []any:
		if len(v) == 1 {
			if e, ok := v[0].(error); ok {
				return cfReplyForm(nil, e)
			}
			return cfReplyForm(v[0], nil)
		}
	}
	return fmt.Sprintf("%T %v", v, v)
}

// runCFScript sends a script's commands to key, pipelined, and returns the
// replies in the files' form.
func runCFScript(t *testing.T, rdb *redis.Client, g *redisbloomtest.Cuckoo, key string, run *redisbloomtest.CuckooRun) []any {
	t.Helper()
	ctx := context.Background()
	var cmds [][]any
	for _, step := range run.Script {
		words := strings.Fields(step.Command)
		for range max(step.Repeat, 1) {
			for _, item := range g.Items(t, step.Items) {
				args := []any{words[0], key}
				if len(words) > 1 {
					args = []any{words[0]}
					for _, w := range words[1:] {
						switch w {
						case "key":
							args = append(args, key)
						case "x":
							args = append(args, string(item))
						default:
							args = append(args, w)
						}
					}
				} else {
					args = append(args, string(item))
				}
				cmds = append(cmds, args)
			}
		}
	}
	var replies []any
	for start := 0; start < len(cmds); start += 1000 {
		p := rdb.Pipeline()
		var sent []*redis.Cmd
		for _, args := range cmds[start:min(len(cmds), start+1000)] {
			sent = append(sent, p.Do(ctx, args...))
		}
		p.Exec(ctx) // each command's error is in its own reply
		for _, c := range sent {
			replies = append(replies, cfReplyForm(c.Result()))
		}
	}
	return replies
}

// cfChunks is every chunk of a key's CF.SCANDUMP, and the reply past the
// last: RedisBloom's [0, nil].
func cfChunks(t *testing.T, rdb *redis.Client, key string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for iter := int64(0); ; {
		v, err := rdb.Do(ctx, "CF.SCANDUMP", key, iter).Slice()
		if err != nil || len(v) != 2 {
			t.Fatalf("%s: CF.SCANDUMP %d: %v %v", key, iter, v, err)
		}
		next := v[0].(int64)
		if next == 0 {
			if v[1] != nil {
				t.Fatalf("%s: CF.SCANDUMP %d: iterator 0 with %T %q, want nil", key, iter, v[1], v[1])
			}
			return out
		}
		out = append(out, fmt.Sprint(next, ":", v[1]))
		iter = next
	}
}

// checkCFState checks key against a state RedisBloom recorded.
func checkCFState(t *testing.T, rdb *redis.Client, g *redisbloomtest.Cuckoo, key string, want *redisbloomtest.CuckooRun) {
	t.Helper()
	ctx := context.Background()
	var wantChunks []string
	for _, c := range want.Chunks {
		wantChunks = append(wantChunks, fmt.Sprint(c.Iterator, ":", string(c.Data)))
	}
	if got := cfChunks(t, rdb, key); !slices.Equal(got, wantChunks) {
		t.Errorf("%s: %d chunks differ from RedisBloom's %d", key, len(got), len(wantChunks))
	}
	info, err := rdb.Do(ctx, "CF.INFO", key).Result()
	if err != nil {
		t.Fatal(err)
	}
	gotInfo := map[string]uint64{}
	for k, v := range infoMap(t, info) {
		gotInfo[k] = uint64(v.(int64))
	}
	if fmt.Sprint(gotInfo) != fmt.Sprint(want.Info) {
		t.Errorf("%s: CF.INFO %v, RedisBloom's %v", key, gotInfo, want.Info)
	}
	prefix := g.Prefix(t)
	var positives []int
	for start := 0; start < 20000; start += 5000 {
		args := []any{"CF.MEXISTS", key}
		for i := start; i < start+5000; i++ {
			args = append(args, prefix+"absent:"+strconv.Itoa(i))
		}
		got, err := rdb.Do(ctx, args...).Slice()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if v == true || v == int64(1) {
				positives = append(positives, start+i)
			}
		}
	}
	if !slices.Equal(positives, want.Positives) {
		t.Errorf("%s: %d false positives, RedisBloom's %d", key, len(positives), len(want.Positives))
	}
	p := rdb.Pipeline()
	var counts []*redis.Cmd
	for i := range 300 {
		counts = append(counts, p.Do(ctx, "CF.COUNT", key, prefix+"item:"+strconv.Itoa(i)))
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, c := range counts {
		if n, _ := c.Uint64(); n != want.Counts[i] {
			t.Errorf("%s: CF.COUNT of item %d: %d, RedisBloom's %d", key, i, n, want.Counts[i])
			break
		}
	}
}

func checkCFReplies(t *testing.T, key string, got, want []any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d replies, RedisBloom gave %d", key, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: reply %d: %v, RedisBloom's %v", key, i, got[i], want[i])
		}
	}
}

// loadCFChunks makes key of a recorded state's chunks.
func loadCFChunks(t *testing.T, rdb *redis.Client, key string, run *redisbloomtest.CuckooRun) {
	t.Helper()
	for _, c := range run.Chunks {
		if err := rdb.Do(context.Background(), "CF.LOADCHUNK", key, c.Iterator, string(c.Data)).Err(); err != nil {
			t.Fatalf("%s: CF.LOADCHUNK %d: %v", key, c.Iterator, err)
		}
	}
}

// replayCFGolden runs g's first script on a fresh key.
func replayCFGolden(t *testing.T, rdb *redis.Client, g *redisbloomtest.Cuckoo, key string) {
	t.Helper()
	if g.Reserve != nil {
		args := []any{"CF.RESERVE", key}
		for _, a := range g.Reserve {
			args = append(args, a)
		}
		if err := rdb.Do(context.Background(), args...).Err(); err != nil {
			t.Fatalf("%s: CF.RESERVE: %v", key, err)
		}
	}
	checkCFReplies(t, key, runCFScript(t, rdb, g, key, &g.CuckooRun), g.Replies)
}

func TestCuckooGoldenThroughTheServer(t *testing.T) {
	golden := redisbloomtest.LoadCuckoo(t, "../..")
	inEachProtocol(t, func(t *testing.T, rdb *redis.Client, proto int) {
		ctx := context.Background()
		for _, g := range golden {
			key := "cf:" + g.Name
			replayCFGolden(t, rdb, g, key)
			if typ, _ := rdb.Type(ctx, key).Result(); typ != "MBbloomCF" {
				t.Fatalf("%s: TYPE %q", key, typ)
			}
			checkCFState(t, rdb, g, key, &g.CuckooRun)
			checkCFReplies(t, key, runCFScript(t, rdb, g, key, &g.AfterMore), g.AfterMore.Replies)
			checkCFState(t, rdb, g, key, &g.AfterMore)

			loaded := "load:" + g.Name
			loadCFChunks(t, rdb, loaded, &g.CuckooRun)
			checkCFState(t, rdb, g, loaded, &g.CuckooRun)
			checkCFReplies(t, loaded, runCFScript(t, rdb, g, loaded, &g.AfterMore), g.AfterMore.Replies)
			checkCFState(t, rdb, g, loaded, &g.AfterMore)
			if testing.Short() && proto == 2 {
				break // the loads of one file in RESP2; every file in RESP3
			}
		}
	})
}

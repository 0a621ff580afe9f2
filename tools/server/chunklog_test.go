package server

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/ohbloom/ohbloom/redisbloom"
)

// A LOADCHUNK data chunk is logged as records of at most rbChunkPiece
// bytes, made before the log's lock is taken (newChunkRecords): chunks of
// several pieces, the last one short, into a RedisBloom key and a cuckoo
// key of a database other than 0, then adds numbered after the pieces,
// come back from the log alone (every reply was received under always, so
// a copy of the directory is what a kill -9 leaves) exactly as they were.
func TestLoadChunksOfManyPiecesReplay(t *testing.T) {
	dir := t.TempDir()
	_, addr := start(t, Config{DataDir: dir, SaveInterval: -1, AppendFsync: "always"})
	c := dial(t, addr)
	mustDo(t, c, "+OK", "SELECT", "3")

	const size = 5*rbChunkPiece/2 + 7 // three pieces, the last short
	chain, err := redisbloom.NewAtomic(redisbloom.Config{Capacity: 2 * size, ErrorRate: 0.01, Expansion: 2, NonScaling: true})
	if err != nil {
		t.Fatal(err)
	}
	_, rbHeader := chain.ScanDump(0, nil)
	cf, err := redisbloom.NewAtomicCuckoo(redisbloom.DefaultCuckooConfig(4 * size))
	if err != nil {
		t.Fatal(err)
	}
	if err := cf.Add([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_, cfHeader := cf.ScanDump(0, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 2*size)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, k := range []struct{ cmd, key string }{{"BF.LOADCHUNK", "rb"}, {"CF.LOADCHUNK", "cf"}} {
		header := rbHeader
		if k.key == "cf" {
			header = cfHeader
		}
		mustDo(t, c, "+OK", k.cmd, k.key, "1", string(header))
		// Two chunks, the second where the first ends.
		mustDo(t, c, "+OK", k.cmd, k.key, strconv.Itoa(size+1), string(data[:size]))
		mustDo(t, c, "+OK", k.cmd, k.key, strconv.Itoa(2*size+1), string(data[size:]))
	}
	if !strings.Contains(chunkDumps(t, c), string(data)) {
		t.Fatal("the dumps do not hold the chunks loaded")
	}
	for i := range 100 {
		item := "added:" + strconv.Itoa(i)
		c.do(t, "BF.ADD", "rb", item)
		c.do(t, "CF.ADD", "cf", item)
	}
	live := chunkDumps(t, c)

	crashed := copyTree(t, dir, "crashed")
	_, addr = start(t, Config{DataDir: crashed, SaveInterval: -1})
	r := dial(t, addr)
	mustDo(t, r, "+OK", "SELECT", "3")
	if got := chunkDumps(t, r); got != live {
		t.Error("after a restart from the log, the keys' dumps differ from the live ones")
	}
}

// chunkDumps is every chunk of BF.SCANDUMP rb and CF.SCANDUMP cf, one
// after another.
func chunkDumps(t *testing.T, c *rawConn) string {
	t.Helper()
	var b bytes.Buffer
	for _, cmd := range []string{"BF.SCANDUMP rb", "CF.SCANDUMP cf"} {
		args := strings.Fields(cmd)
		for iter := "0"; ; {
			if _, err := c.Write([]byte(resp(args[0], args[1], iter))); err != nil {
				t.Fatal(err)
			}
			expectLine(t, c, "*2")
			iter = strings.TrimPrefix(readLine(t, c), ":")
			b.WriteString(readBulk(t, c))
			if iter == "0" {
				break
			}
		}
	}
	return b.String()
}

// mustDo sends a command and checks the first line of its reply.
func mustDo(t *testing.T, c *rawConn, want string, args ...string) {
	t.Helper()
	if got := c.do(t, args...); got != want {
		t.Fatalf("%.40q answered %.200q, want %q", args, got, want)
	}
}

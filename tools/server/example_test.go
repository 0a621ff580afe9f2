package server_test

import (
	"context"
	"fmt"
	"net"

	"github.com/ohbloom/ohbloom/tools/server"
	"github.com/redis/go-redis/v9"
)

// A server on a loopback port, used through go-redis's RedisBloom commands
// exactly as a RedisBloom server would be.
func Example() {
	srv, err := server.New(server.Config{}) // in memory; set DataDir to persist
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	defer rdb.Close()
	rdb.BFReserve(ctx, "blocks", 0.01, 1_000_000)
	added, _ := rdb.BFAdd(ctx, "blocks", "did:plc:alice|did:plc:bob").Result()
	blocked, _ := rdb.BFExists(ctx, "blocks", "did:plc:alice|did:plc:bob").Result()
	other, _ := rdb.BFExists(ctx, "blocks", "did:plc:alice|did:plc:carol").Result()
	fmt.Println(added, blocked, other)
	// Output: true true false
}

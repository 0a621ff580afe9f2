package server

import (
	"strings"
	"testing"
)

// Attacks found by trying the server as a hostile client would; each test
// failed before its fix.

// A MULTI queue is counted whole against MaxRequestBytes: the slices that
// say where each queued argument lies take 16 bytes an argument, while an
// empty argument takes 6 on the wire, so a queue of commands with many
// empty arguments must hit the limit by what it holds, not only by its
// bytes. (Uncounted, one client queued 40 commands of 500,000 empty
// arguments and held 570 MB under the default 64 MiB limit.)
func TestMultiQueueCountsEveryArgument(t *testing.T) {
	const limit = 64 << 10
	_, addr := start(t, Config{MaxRequestBytes: limit})
	c := dial(t, addr)
	expect(t, c, "MULTI\r\n", "+OK\r\n")
	// Each command: 1000 empty arguments, 6 KB on the wire, 16 KB of
	// spans queued; well within the limit alone.
	const n = 1000
	cmd := "*" + itoa(n+2) + "\r\n$7\r\nBF.MADD\r\n$1\r\nk\r\n" + strings.Repeat("$0\r\n\r\n", n)
	queued := 0
	for range 2 * limit / (16 * n) {
		if _, err := c.Write([]byte(cmd)); err != nil {
			t.Fatal(err)
		}
		line, err := c.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "+QUEUED\r\n" {
			queued++
			continue
		}
		if line != "-"+string(errQueuedTooLarge)+"\r\n" {
			t.Fatalf("queued command %d: got %q", queued+1, line)
		}
		if held := int64(queued) * 16 * n; held > limit {
			t.Fatalf("the queue was refused only after holding %d bytes of argument slices, over the limit of %d", held, limit)
		}
		expect(t, c, "EXEC\r\n", "-"+errExecAbort+"\r\n")
		return
	}
	t.Fatalf("%d commands of %d empty arguments each (%d bytes of slices) queued under a limit of %d", queued, n, queued*16*n, limit)
}

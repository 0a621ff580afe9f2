package server

import (
	"bufio"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The crash test: a server in a process of its own is killed with SIGKILL
// in the middle of a pipelined load, and a new one started on its
// directory must hold every item the load saw acknowledged (under
// everysec, every item acknowledged more than two seconds before the
// kill).

const serverProcessEnv = "OHBLOOM_TEST_SERVER_PROCESS"

// TestServerProcess is not a test of its own: the crash test runs the test
// binary again with serverProcessEnv set (dir,policy,save interval) and
// this serves until the process is killed.
func TestServerProcess(t *testing.T) {
	spec := os.Getenv(serverProcessEnv)
	if spec == "" {
		t.Skip("the crash test's server process")
	}
	parts := strings.Split(spec, ",")
	every, _ := time.ParseDuration(parts[2])
	s, err := New(Config{DataDir: parts[0], AppendFsync: parts[1], SaveInterval: every,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	fmt.Println("LISTENING", ln.Addr())
	s.Serve(ln)
}

// serverProcess starts the test binary as a server on dir and returns its
// address.
func serverProcess(t *testing.T, dir, policy string, saveEvery time.Duration) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), serverProcessEnv+"="+dir+","+policy+","+saveEvery.String())
	var logs syncBuffer
	cmd.Stderr = &logs
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server process on %s logged:\n%s", dir, logs.String())
		}
	})
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "LISTENING ") {
		t.Fatalf("server process: %q %v", line, err)
	}
	return cmd, strings.TrimSpace(strings.TrimPrefix(line, "LISTENING "))
}

// ack is a batch of items whose BF.MADD (or CF.INSERT) reply arrived.
type ack struct {
	items []string
	cf    bool
	at    time.Time
}

// loadUntil pipelines BF.MADD and CF.INSERT batches on conns connections,
// 16 in flight on each, until stop says so after an acknowledgement, then
// kills the server and returns what was acknowledged and when the kill
// happened.
func loadUntil(t *testing.T, cmd *exec.Cmd, addr string, round int, stop func(acks []ack) bool) ([]ack, time.Time) {
	const conns, inFlight, batch = 4, 16, 50
	var mu sync.Mutex
	var acks []ack
	var killedAt time.Time
	killed := make(chan struct{})
	var once sync.Once
	kill := func() {
		once.Do(func() {
			killedAt = time.Now()
			cmd.Process.Kill()
			close(killed)
		})
	}
	// Every connection is open before any load starts: a connection's
	// acknowledgements can end the round and kill the server while a later
	// one would still be dialling, which then finds nobody listening (seen
	// under CI's CPU hogs).
	var open []net.Conn
	for range conns {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		open = append(open, conn)
	}
	var wg sync.WaitGroup
	for c, conn := range open {
		sent := make(chan ack, inFlight) // in flight, in order
		wg.Add(2)
		go func() { // writer
			defer wg.Done()
			defer close(sent)
			w := bufio.NewWriter(conn)
			for n := 0; ; n++ {
				a := ack{cf: n%4 == 3}
				var b strings.Builder
				cmdName, key := "BF.MADD", "bf"
				if a.cf {
					cmdName, key = "CF.INSERT", "cf"
				}
				args := []string{cmdName, key}
				if a.cf {
					args = append(args, "ITEMS")
				}
				for i := range batch {
					item := fmt.Sprintf("r%d-c%d-n%d-i%d", round, c, n, i)
					a.items = append(a.items, item)
					args = append(args, item)
				}
				fmt.Fprintf(&b, "*%d\r\n", len(args))
				for _, arg := range args {
					fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(arg), arg)
				}
				select {
				case sent <- a:
				default:
					// Full: what is written must go before we wait.
					if w.Flush() != nil {
						return
					}
					select {
					case sent <- a:
					case <-killed:
						return
					}
				}
				w.WriteString(b.String())
				if n%4 == 0 {
					if w.Flush() != nil {
						return
					}
				}
			}
		}()
		go func() { // reader
			defer wg.Done()
			r := bufio.NewReader(conn)
			for a := range sent {
				line, err := r.ReadString('\n')
				if err != nil {
					return // killed
				}
				if line != fmt.Sprintf("*%d\r\n", batch) {
					t.Errorf("reply %q", line)
					kill()
					return
				}
				for range batch {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if line[0] != ':' {
						t.Errorf("item reply %q", line)
						kill()
						return
					}
				}
				a.at = time.Now()
				mu.Lock()
				select {
				case <-killed:
					// Read after the kill began: not counted, the
					// kill may have raced it.
				default:
					acks = append(acks, a)
					if stop(acks) {
						kill()
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	cmd.Wait()
	return acks, killedAt
}

// checkAcked starts a server on dir and checks that every acknowledged item
// acknowledged before deadline is there.
func checkAcked(t *testing.T, dir, policy string, acks []ack, deadline time.Time) int {
	t.Helper()
	_, addr := serverProcess(t, dir, policy, -1)
	c := dial(t, addr)
	checked := 0
	for _, a := range acks {
		if a.at.After(deadline) {
			continue
		}
		cmd := "BF.MEXISTS"
		key := "bf"
		if a.cf {
			cmd, key = "CF.MEXISTS", "cf"
		}
		args := append([]string{cmd, key}, a.items...)
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, arg := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(arg), arg)
		}
		c.Write([]byte(b.String()))
		if r := c.line(t); r != "*"+strconv.Itoa(len(a.items)) {
			t.Fatalf("%s: %q", cmd, r)
		}
		for _, item := range a.items {
			if r := c.line(t); r != ":1" {
				t.Fatalf("%s %s, acknowledged %v before the deadline, is missing after the restart (%q)", key, item, deadline.Sub(a.at), r)
			}
		}
		checked += len(a.items)
	}
	return checked
}

func TestKill9DuringPipelinedLoad(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 3
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range rounds {
		dir := t.TempDir()
		// Half the rounds save every 50 ms, so that kills also land
		// in saves and log rotations.
		saveEvery := time.Duration(-1)
		if round%2 == 1 {
			saveEvery = 50 * time.Millisecond
		}
		cmd, addr := serverProcess(t, dir, "always", saveEvery)
		c := dial(t, addr)
		c.do(t, "BF.RESERVE", "bf", "0.01", "100000")
		c.do(t, "CF.RESERVE", "cf", "100000")
		want := 20 + rng.IntN(300)
		acks, killedAt := loadUntil(t, cmd, addr, round, func(acks []ack) bool { return len(acks) >= want })
		n := checkAcked(t, dir, "always", acks, killedAt)
		if n == 0 {
			t.Fatalf("round %d: nothing acknowledged", round)
		}
		t.Logf("always, round %d: %d items acknowledged, all there after kill -9", round, n)
	}
	if testing.Short() {
		return // the everysec rounds take over two seconds each
	}
	for round := range 2 {
		dir := t.TempDir()
		saveEvery := []time.Duration{-1, 300 * time.Millisecond}[round]
		cmd, addr := serverProcess(t, dir, "everysec", saveEvery)
		c := dial(t, addr)
		c.do(t, "BF.RESERVE", "bf", "0.01", "1000000")
		c.do(t, "CF.RESERVE", "cf", "1000000")
		acks, killedAt := loadUntil(t, cmd, addr, rounds+round, func(acks []ack) bool {
			return acks[len(acks)-1].at.Sub(acks[0].at) > 2500*time.Millisecond
		})
		n := checkAcked(t, dir, "everysec", acks, killedAt.Add(-2*time.Second))
		if n == 0 {
			t.Fatalf("everysec round %d: nothing acknowledged 2 s before the kill", round)
		}
		t.Logf("everysec, round %d: %d items acknowledged over 2 s before kill -9, all there", round, n)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

package server

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
// binary again with serverProcessEnv set (dir,policy,save interval[,bytes
// the log reserves ahead]) and this serves until the process is killed.
func TestServerProcess(t *testing.T) {
	spec := os.Getenv(serverProcessEnv)
	if spec == "" {
		t.Skip("the crash test's server process")
	}
	parts := strings.Split(spec, ",")
	every, _ := time.ParseDuration(parts[2])
	if len(parts) > 3 {
		step, _ := strconv.ParseInt(parts[3], 10, 64)
		reserveStep, reserveKeep, minGrow = step, step/16, step/64
	}
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
	return serverProcessIn(t, nil, dir+","+policy+","+saveEvery.String())
}

// serverProcessIn starts the test binary as a server of spec (see
// TestServerProcess) through the command wrap (nsenter, to run it in
// other namespaces) and returns its address.
func serverProcessIn(t *testing.T, wrap []string, spec string) (*exec.Cmd, string) {
	t.Helper()
	dir := strings.Split(spec, ",")[0]
	args := append(wrap, os.Args[0], "-test.run=^TestServerProcess$", "-test.count=1")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), serverProcessEnv+"="+spec)
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

// dialEachReply is dial for a long conversation: each command written
// gets a deadline of its own, where dial sets one for the whole
// conversation. The length of a run of a thousand commands, each waiting
// for fsyncs (a save every few milliseconds beside them), grows with the
// machine's load (beside CPU hogs TestKeyspaceSurvivesKill's took over
// the 30 s that dial allows); one reply's stays far below the deadline,
// which only catches a server that stopped answering.
func dialEachReply(t *testing.T, addr string) *rawConn {
	t.Helper()
	c := dial(t, addr)
	return &rawConn{replyDeadline{c.Conn}, c.r}
}

// replyDeadline moves the connection's deadline at each write.
type replyDeadline struct{ net.Conn }

func (c replyDeadline) Write(b []byte) (int, error) {
	c.Conn.SetDeadline(time.Now().Add(30 * time.Second))
	return c.Conn.Write(b)
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
func loadUntil(t *testing.T, cmd *exec.Cmd, addr string, round int, stop func(acks []ack) bool) ([]ack, time.Time, int64) {
	const conns, inFlight, batch = 4, 16, 50
	var cfSent atomic.Int64 // CF items written to a connection
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
				if a.cf {
					cfSent.Add(batch)
				}
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
	return acks, killedAt, cfSent.Load()
}

// checkAcked starts a server on dir and checks that every acknowledged item
// acknowledged before deadline is there.
//
// The CF key's items, each added once, must number at most cfSent: a
// change replayed twice (over a snapshot that held it) would count twice.
func checkAcked(t *testing.T, dir, policy string, acks []ack, deadline time.Time, cfSent int64) int {
	t.Helper()
	_, addr := serverProcess(t, dir, policy, -1)
	c := dialEachReply(t, addr)
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
	if cfSent > 0 {
		c.Write([]byte(resp("CF.DEBUG", "cf")))
		c.line(t)
		debug := c.line(t)
		var items int64
		if i := strings.Index(debug, " items:"); i >= 0 {
			items, _ = strconv.ParseInt(strings.Fields(debug[i+7:])[0], 10, 64)
		}
		if items < 1 || items > cfSent {
			t.Fatalf("after the restart the CF key holds %d items (%q); %d were sent", items, debug, cfSent)
		}
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
		acks, killedAt, cfSent := loadUntil(t, cmd, addr, round, func(acks []ack) bool { return len(acks) >= want })
		n := checkAcked(t, dir, "always", acks, killedAt, cfSent)
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
		acks, killedAt, cfSent := loadUntil(t, cmd, addr, rounds+round, func(acks []ack) bool {
			return acks[len(acks)-1].at.Sub(acks[0].at) > 2500*time.Millisecond
		})
		n := checkAcked(t, dir, "everysec", acks, killedAt.Add(-2*time.Second), cfSent)
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

// smallFS is a small file system of its own, mounted in a mount namespace
// that a holder process keeps: a tmpfs in a user namespace (no root
// needed, where unprivileged user namespaces are allowed), or, for root,
// ext4 on a loop device. Commands reach it through nsenter (wrap).
type smallFS struct {
	dir  string
	wrap []string
}

func mountSmallFS(t *testing.T, kind string, size int64) *smallFS {
	t.Helper()
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	dir := t.TempDir()
	var cmd *exec.Cmd
	var enter []string
	switch kind {
	case "tmpfs":
		cmd = exec.Command("unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
			`mount -t tmpfs -o size="$1" tmpfs "$0" && echo ready && exec sleep 100000`, dir, strconv.FormatInt(size, 10))
		enter = []string{"--user", "--mount", "--preserve-credentials"}
	case "ext4":
		if os.Geteuid() != 0 {
			t.Skip("ext4 on a loop device needs root")
		}
		if _, err := exec.LookPath("mkfs.ext4"); err != nil {
			t.Skip("no mkfs.ext4 here")
		}
		cmd = exec.Command("unshare", "--mount", "sh", "-c",
			`truncate -s "$2" "$1" && mkfs.ext4 -q -m 0 "$1" && mount -o loop "$1" "$0" && echo ready && exec sleep 100000`,
			dir, filepath.Join(t.TempDir(), "fs.img"), strconv.FormatInt(size, 10))
		enter = []string{"--mount"}
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start unshare: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Skipf("cannot mount a %s in a namespace of its own here: %s", kind, stderr.String())
	}
	wrap := append([]string{"nsenter", "--target", strconv.Itoa(cmd.Process.Pid)}, enter...)
	return &smallFS{dir: dir, wrap: append(wrap, "--")}
}

// sh runs a shell script on the file system's side and returns its
// output.
func (f *smallFS) sh(t *testing.T, script string) string {
	t.Helper()
	args := append(append([]string{}, f.wrap...), "sh", "-c", script)
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", script, err, out)
	}
	return string(out)
}

// The floor of a full disk under everysec, on real file systems: a server
// fills the disk until changes are refused (MISCONF), a DEL still works,
// and so the log has written what it held while the disk stays full
// (the DEL's reply waits for its record to be fsynced), the server is
// killed with SIGKILL, the disk gets room, and a new server holds every
// item acknowledged (reserve.go says how). Before the log reserved space,
// the records the failed write could not write were lost, and the DEL was
// not acknowledged.
func TestKill9OnFullDisk(t *testing.T) {
	for _, kind := range []string{"tmpfs", "ext4"} {
		t.Run(kind, func(t *testing.T) {
			fsys := mountSmallFS(t, kind, 16<<20)
			dir := fsys.dir + "/data"
			fsys.sh(t, "mkdir "+dir)
			spec := fmt.Sprintf("%s,everysec,-1s,%d", dir, 1<<20) // 1 MiB reserved ahead
			cmd, addr := serverProcessIn(t, fsys.wrap, spec)
			c := dialEachReply(t, addr)
			if r := c.do(t, "BF.RESERVE", "bf", "0.01", "1000000"); r != "+OK" {
				t.Fatal(r)
			}
			if r := c.do(t, "BF.ADD", "gone", "x"); r != ":1" {
				t.Fatal(r)
			}
			// Nothing left but what the log reserved.
			fsys.sh(t, fmt.Sprintf("head -c 1G /dev/zero > %s/filler 2>/dev/null; df -k %s", fsys.dir, fsys.dir))
			var acked [][]string
			misconf := ""
			for n := 0; misconf == ""; n++ {
				if n == 100_000 {
					t.Fatal("no MISCONF on a full disk")
				}
				items := make([]string, 100)
				for i := range items {
					items[i] = fmt.Sprintf("n%d-i%d", n, i)
				}
				switch r := c.do(t, append([]string{"BF.MADD", "bf"}, items...)...); {
				case r == "*100":
					acked = append(acked, items)
				case strings.HasPrefix(r, "-MISCONF"):
					misconf = r
				default:
					t.Fatalf("BF.MADD on a filling disk: %q", r)
				}
			}
			t.Logf("%d items acknowledged, then %s", 100*len(acked), misconf)
			del := dial(t, addr) // a DEL not acknowledged closes its connection
			del.Write([]byte(resp("DEL", "gone")))
			if r, err := del.r.ReadString('\n'); r != ":1\r\n" {
				t.Errorf("DEL on the full disk: %q %v", r, err)
			}
			// The DEL's reply waits until its record is written and
			// fsynced, and so every record before it: the log holds
			// nothing more, on a disk still full.
			if info := c.info(t, "persistence"); !strings.Contains(info, "aof_buffer_length:0\r\n") {
				t.Errorf("the log holds records not written after the DEL: %q", info)
			}
			cmd.Process.Kill()
			cmd.Wait()
			fsys.sh(t, fmt.Sprintf("rm %s/filler", fsys.dir))
			_, addr = serverProcessIn(t, fsys.wrap, spec)
			c = dialEachReply(t, addr)
			for _, items := range acked {
				c.Write([]byte(resp(append([]string{"BF.MEXISTS", "bf"}, items...)...)))
				if r := c.line(t); r != "*100" {
					t.Fatalf("BF.MEXISTS: %q", r)
				}
				for _, item := range items {
					if r := c.line(t); r != ":1" {
						t.Fatalf("%s, acknowledged before the disk was full, is lost after kill -9 (%q)", item, r)
					}
				}
			}
			if r := c.do(t, "EXISTS", "gone"); r != ":0" {
				t.Errorf("the DEL acknowledged on the full disk is undone after kill -9: EXISTS %q", r)
			}
			if r := c.do(t, "BF.ADD", "bf", "after"); r != ":1" {
				t.Errorf("BF.ADD once the disk has room: %q", r)
			}
		})
	}
}

// info returns an INFO section.
func (c *rawConn) info(t *testing.T, section string) string {
	t.Helper()
	c.Write([]byte(resp("INFO", section)))
	n, err := strconv.Atoi(strings.TrimPrefix(c.line(t), "$"))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(c.r, b); err != nil {
		t.Fatal(err)
	}
	return string(b[:n])
}

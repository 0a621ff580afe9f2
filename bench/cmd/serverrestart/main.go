// Command serverrestart measures what a restart of `ohbloom serve` costs:
// the time from the process's start to its first correct BF.EXISTS, and
// its memory once it answers, against the bytes of the filters it serves.
// bench/server_restart.sh runs it; the table it prints is in
// docs/server.md.
//
//	serverrestart -serve name=/path/to/ohbloom[,name=path...] [-sizes 0.2,1,2] [-rounds 3]
//
// For each size (GB of filters) and fill it makes a data directory with
// the first server (run with --appendonly no and two event loops): keys of
// about -key-bytes each, reserved with BF.RESERVE at 1%, each given one
// known item ("empty"), or filled to its capacity with distinct items
// ("filled": BF.MADD of 1000 items, 32 in flight, on two connections);
// then SAVE, the running server's RSS, and kill -9. Each other server
// gets a copy of the directory, starts on it once and saves it (a newer
// build rewrites the records of an older one in its own version, which
// the older could not read): list the oldest build first. Then, rounds
// times, each server in turn starts on its directory with its defaults (the
// log on), its files in the page cache as after a crash (with -cold they
// are evicted first with posix_fadvise DONTNEED), and the driver polls
// from the moment the process starts: it connects every millisecond until
// the port takes it, then sends BF.EXISTS of every key's known item until
// all of them answer 1 (an error such as -LOADING, or 0, is not an
// answer). At that moment it reads the process's VmRSS, VmHWM (its peak)
// and CPU time from /proc, then INFO's used_memory_filters, and kills it.
// It prints one Markdown row per server, size and fill: medians over the
// rounds.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	serve := flag.String("serve", "", "servers to measure: name=/path/to/ohbloom, comma-separated; the first fills the data directories")
	sizes := flag.String("sizes", "0.2,1,2", "GB of filters (10^9 bytes), comma-separated")
	fills := flag.String("fills", "empty,filled", "empty (one known item a key) and/or filled (to capacity)")
	rounds := flag.Int("rounds", 3, "restarts of each server for each size and fill")
	keyBytes := flag.Float64("key-bytes", 200e6, "bytes of each key's filter, about")
	port := flag.Int("port", 29420, "port the servers listen on")
	work := flag.String("work", "", "directory for the data directories (default: a new one under /tmp, removed at exit)")
	cold := flag.Bool("cold", false, "evict the data files from the page cache before each start")
	flag.BoolVar(&keep, "keep", false, "keep the data directories in -work, and use those an earlier run kept")
	flag.BoolVar(&verbose, "v", false, "print every restart to stderr")
	flag.Parse()
	if err := run(*serve, *sizes, *fills, *rounds, *keyBytes, *port, *work, *cold); err != nil {
		fmt.Fprintln(os.Stderr, "serverrestart:", err)
		os.Exit(1)
	}
}

type server struct{ name, bin string }

var keep, verbose bool

// result is one restart.
type result struct {
	ready                  time.Duration
	cpu                    float64 // the server's utime+stime at ready, seconds
	rss, peak, filterBytes uint64
}

func run(serve, sizes, fills string, rounds int, keyBytes float64, port int, work string, cold bool) error {
	var servers []server
	for _, s := range strings.Split(serve, ",") {
		name, bin, ok := strings.Cut(s, "=")
		if !ok || name == "" || bin == "" {
			return fmt.Errorf("-serve %q: want name=/path/to/ohbloom", s)
		}
		servers = append(servers, server{name, bin})
	}
	if work == "" {
		dir, err := os.MkdirTemp("", "ohbloom-restart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		work = dir
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	fmt.Printf("| server | GB | fill | keys | filters' bytes | RSS before restart | ready (s) | CPU to ready (s) | RSS after | RSS after / bytes | peak RSS | peak / bytes |\n")
	fmt.Printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, size := range strings.Split(sizes, ",") {
		gb, err := strconv.ParseFloat(size, 64)
		if err != nil || gb <= 0 {
			return fmt.Errorf("-sizes: %q", size)
		}
		for _, fill := range strings.Split(fills, ",") {
			if fill != "empty" && fill != "filled" {
				return fmt.Errorf("-fills: %q", fill)
			}
			keys := max(1, int(math.Round(gb*1e9/keyBytes)))
			dir := filepath.Join(work, fmt.Sprintf("%s-%s-%d", size, fill, keys))
			// With -keep, a directory prepared by an earlier run is used
			// again: its marker file holds the RSS measured then.
			marker := dir + ".rss-before"
			var rssBefore uint64
			if b, err := os.ReadFile(marker); err == nil && keep {
				rssBefore, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			} else {
				os.RemoveAll(dir)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				if rssBefore, err = prepare(servers[0].bin, dir, addr, keys, gb*1e9/float64(keys), fill == "filled"); err != nil {
					return fmt.Errorf("%s GB %s: %w", size, fill, err)
				}
				if err := os.WriteFile(marker, []byte(strconv.FormatUint(rssBefore, 10)+"\n"), 0o644); err != nil {
					return err
				}
			}
			// Each other server restarts on a copy of its own, which it
			// has saved once: a newer build writes its own record version,
			// which an older one could not read.
			dirs := []string{dir}
			for _, s := range servers[1:] {
				d := dir + "-" + s.name
				dirs = append(dirs, d)
				if _, err := os.Stat(d); err == nil && keep {
					continue
				}
				if err := convert(s.bin, dir, d, addr); err != nil {
					return fmt.Errorf("%s, %s GB %s: %w", s.name, size, fill, err)
				}
			}
			byServer := make([][]result, len(servers))
			for range rounds {
				for i, s := range servers {
					if cold {
						if err := evict(dirs[i]); err != nil {
							return err
						}
					}
					r, err := restart(s.bin, dirs[i], addr, keys)
					if err != nil {
						return fmt.Errorf("%s, %s GB %s: %w", s.name, size, fill, err)
					}
					byServer[i] = append(byServer[i], r)
					if verbose {
						fmt.Fprintf(os.Stderr, "%s %s GB %s: ready %.3f s, CPU %.2f s, RSS %s, peak %s\n", s.name, size, fill, r.ready.Seconds(), r.cpu, mb(float64(r.rss)), mb(float64(r.peak)))
					}
				}
			}
			for i, s := range servers {
				rs := byServer[i]
				ready := median(rs, func(r result) float64 { return r.ready.Seconds() })
				cpu := median(rs, func(r result) float64 { return r.cpu })
				rss := median(rs, func(r result) float64 { return float64(r.rss) })
				peak := median(rs, func(r result) float64 { return float64(r.peak) })
				fb := float64(rs[0].filterBytes)
				fmt.Printf("| %s | %s | %s | %d | %s | %s | %.3f | %.2f | %s | %.2f | %s | %.2f |\n",
					s.name, size, fill, keys, mb(fb), mb(float64(rssBefore)), ready, cpu, mb(rss), rss/fb, mb(peak), peak/fb)
			}
			if !keep {
				for _, d := range dirs {
					os.RemoveAll(d)
				}
				os.Remove(marker)
			}
		}
	}
	return nil
}

func mb(b float64) string { return fmt.Sprintf("%.0f MB", b/1e6) }

func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// start runs bin serve on dir and returns the process, the moment just
// before it started, and a channel closed when it exits.
func start(bin, dir, addr string, extra ...string) (*exec.Cmd, time.Time, <-chan struct{}, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--addr", addr, "--dir", dir, "--save-interval", "-1s"}, extra...)...)
	log, err := os.Create(dir + ".log")
	if err != nil {
		return nil, time.Time{}, nil, err
	}
	cmd.Stderr = log
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, t0, nil, err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); log.Close(); close(done) }()
	return cmd, t0, done, nil
}

func kill(cmd *exec.Cmd, done <-chan struct{}) {
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// dial connects, retrying every millisecond while the port refuses.
func dial(addr string, done <-chan struct{}) (*conn, error) {
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			return &conn{c: c, r: bufio.NewReaderSize(c, 1<<16), w: bufio.NewWriterSize(c, 1<<20)}, nil
		}
		select {
		case <-done:
			return nil, errors.New("the server exited before it listened")
		case <-time.After(time.Millisecond):
		}
	}
}

func keyName(i int) string { return "restart:" + strconv.Itoa(i) }

const probe = "known-item"

// prepare makes the data directory and returns the running server's RSS
// after its SAVE.
func prepare(bin, dir, addr string, keys int, bytesPerKey float64, filled bool) (uint64, error) {
	// Without the log: the fill is not what is measured, and SAVE
	// leaves the snapshot alone in the directory either way.
	cmd, _, done, err := start(bin, dir, addr, "--appendonly", "no", "--event-loops", "2")
	if err != nil {
		return 0, err
	}
	defer kill(cmd, done)
	c, err := dial(addr, done)
	if err != nil {
		return 0, err
	}
	defer c.c.Close()
	// Calibrate: the bytes of a reservation of 10^6 items, and scale.
	if _, err := c.do("BF.RESERVE", "calibrate", "0.01", "1000000"); err != nil {
		return 0, err
	}
	info, err := c.do("BF.INFO", "calibrate", "SIZE")
	if err != nil {
		return 0, err
	}
	per := float64(info.([]any)[0].(int64)) / 1e6
	if _, err := c.do("DEL", "calibrate"); err != nil {
		return 0, err
	}
	capacity := int64(bytesPerKey / per)
	for i := range keys {
		if _, err := c.do("BF.RESERVE", keyName(i), "0.01", strconv.FormatInt(capacity, 10)); err != nil {
			return 0, err
		}
		if _, err := c.do("BF.ADD", keyName(i), probe); err != nil {
			return 0, err
		}
	}
	if filled {
		// Two connections, each filling every other key, for the two
		// event loops.
		errs := make(chan error, 2)
		for part := range 2 {
			go func() {
				fc, err := dial(addr, done)
				if err != nil {
					errs <- err
					return
				}
				defer fc.c.Close()
				for i := part; i < keys; i += 2 {
					if err := fc.fill(keyName(i), capacity-1); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				return 0, err
			}
		}
	}
	if _, err := c.do("SAVE"); err != nil {
		return 0, err
	}
	st, err := status(cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	return st["VmRSS"], nil
}

// convert copies the data directory from to a new directory to, starts
// bin on it, and saves: bin rewrites what it reads from an older record
// version in its own.
func convert(bin, from, to, addr string) error {
	os.RemoveAll(to)
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	cmd, _, done, err := start(bin, to, addr, "--appendonly", "no")
	if err != nil {
		return err
	}
	defer kill(cmd, done)
	c, err := dial(addr, done)
	if err != nil {
		return err
	}
	defer c.c.Close()
	_, err = c.do("SAVE")
	return err
}

// restart starts bin on dir and measures it until its first correct
// answer.
func restart(bin, dir, addr string, keys int) (result, error) {
	cmd, t0, done, err := start(bin, dir, addr)
	if err != nil {
		return result{}, err
	}
	defer kill(cmd, done)
	c, err := dial(addr, done)
	if err != nil {
		return result{}, err
	}
	defer c.c.Close()
	for {
		for i := range keys {
			c.send("BF.EXISTS", keyName(i), probe)
		}
		if err := c.w.Flush(); err != nil {
			return result{}, err
		}
		correct := 0
		for range keys {
			v, err := c.read()
			if err != nil {
				return result{}, err
			}
			if v == int64(1) {
				correct++
			}
		}
		if correct == keys {
			break
		}
		select {
		case <-done:
			return result{}, errors.New("the server exited before it answered")
		case <-time.After(time.Millisecond):
		}
	}
	r := result{ready: time.Since(t0)}
	st, err := status(cmd.Process.Pid)
	if err != nil {
		return r, err
	}
	r.rss, r.peak = st["VmRSS"], st["VmHWM"]
	if r.cpu, err = cpuSeconds(cmd.Process.Pid); err != nil {
		return r, err
	}
	v, err := c.do("INFO", "memory")
	if err != nil {
		return r, err
	}
	for _, line := range strings.Split(v.(string), "\r\n") {
		if n, ok := strings.CutPrefix(line, "used_memory_filters:"); ok {
			r.filterBytes, _ = strconv.ParseUint(n, 10, 64)
		}
	}
	if r.filterBytes == 0 {
		return r, errors.New("INFO has no used_memory_filters")
	}
	return r, nil
}

// status reads the kB fields of /proc/PID/status, in bytes.
func status(pid int) (map[string]uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	m := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		f := strings.Fields(rest)
		if ok && len(f) == 2 && f[1] == "kB" {
			n, _ := strconv.ParseUint(f[0], 10, 64)
			m[name] = n * 1024
		}
	}
	return m, nil
}

// cpuSeconds is the process's utime+stime (/proc/PID/stat), in clock
// ticks of 1/100 s, the unit Linux reports them in for user space.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from the last ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return float64(utime+stime) / 100, nil
}

// conn is a minimal RESP2 client: what the measurement needs and no more.
type conn struct {
	c   net.Conn
	r   *bufio.Reader
	w   *bufio.Writer
	num []byte
}

func (c *conn) send(args ...string) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
}

func (c *conn) do(args ...string) (any, error) {
	c.send(args...)
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	v, err := c.read()
	if err != nil {
		return nil, err
	}
	if e, ok := v.(error); ok {
		return nil, fmt.Errorf("%s: %w", args[0], e)
	}
	return v, nil
}

// fill adds n distinct items to key: BF.MADD of 1000 items, 32 in flight.
func (c *conn) fill(key string, n int64) error {
	const batch, depth = 1000, 32
	inFlight := 0
	item := make([]byte, 0, 32)
	c.num = make([]byte, 0, 20)
	for next := int64(0); next < n || inFlight > 0; {
		for inFlight < depth && next < n {
			m := min(batch, n-next)
			fmt.Fprintf(c.w, "*%d\r\n$7\r\nBF.MADD\r\n$%d\r\n%s\r\n", m+2, len(key), key)
			for j := range m {
				// "$<len>\r\ni<base 36>\r\n", without fmt: the client
				// must not be what limits the fill.
				item = strconv.AppendInt(append(item[:0], 'i'), next+j, 36)
				c.w.WriteByte('$')
				c.w.Write(strconv.AppendInt(c.num[:0], int64(len(item)), 10))
				c.w.WriteString("\r\n")
				c.w.Write(item)
				c.w.WriteString("\r\n")
			}
			next += m
			inFlight++
		}
		if err := c.w.Flush(); err != nil {
			return err
		}
		if err := c.skipIntegers(); err != nil {
			return err
		}
		inFlight--
	}
	return nil
}

// skipIntegers reads a reply that must be an array of integers, as
// BF.MADD's, without keeping it: the client must not be what limits the
// fill.
func (c *conn) skipIntegers() error {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if line[0] != '*' {
		return fmt.Errorf("BF.MADD: %q", line)
	}
	n, err := strconv.Atoi(string(line[1 : len(line)-2]))
	if err != nil {
		return err
	}
	for range n {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if line[0] != ':' {
			return fmt.Errorf("BF.MADD: %q", line)
		}
	}
	return nil
}

// read reads one reply: int64, string, []any, nil or an error value.
func (c *conn) read() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, fmt.Errorf("bad reply %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return errors.New(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$', '=':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.read(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("bad reply %q", line)
}

package server

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // for go:linkname
)

// What the server counts of its commands and clients, for INFO, SLOWLOG,
// LATENCY and CLIENT LIST, and where it keeps the settings that CONFIG
// SET changes at run time.
//
// Counting costs every command a clock read at each end and two atomic
// additions on a shard of counters of its own client's (statShards, by
// client id), so that clients on different event loops do not write the
// same cache lines.

// nanotime is the runtime's monotonic clock: the cheapest one, which is
// all a duration needs.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// introspection is the state of INFO, CONFIG, ACL, SLOWLOG, LATENCY and
// CLIENT, part of the Server.
type introspection struct {
	stats   [statShards]statShard
	started time.Time

	// live are the settings CONFIG SET changes while the server runs.
	live liveSettings

	// Totals of closed connections, added to the live ones' for INFO.
	connectionsReceived, rejectedConnections atomic.Int64
	netIn, netOut                            atomic.Int64
	aclDenied                                [4]atomic.Int64 // auth, cmd, key, channel
	resetAt                                  atomic.Int64    // CONFIG RESETSTAT, unix seconds

	errMu     sync.Mutex
	errCounts map[string]int64 // errorstats, by error code
	errTotal  atomic.Int64

	ops opsMeter // instantaneous_ops_per_sec and the network rates

	slowlog slowlog
	latency latencyMonitor
	acl     acl
	mem     memoryGauge

	registry clientRegistry

	// keysLoaded is the number of keys read at start.
	keysLoaded int64

	// configFile is the file the settings were read from, for CONFIG
	// REWRITE; "" without one.
	configFile string
	// configMu serialises CONFIG SET and CONFIG REWRITE.
	configMu sync.Mutex

	coarseClock atomic.Uint32
	coarseUnix  atomic.Int64

	cronStop chan struct{}
	cronDone chan struct{}
}

// liveSettings are the settings CONFIG SET changes at run time.
type liveSettings struct {
	maxMemory              atomic.Int64 // bytes, 0: no limit
	slowlogSlowerThan      atomic.Int64 // µs; negative: off
	slowlogMaxLen          atomic.Int64
	latencyThreshold       atomic.Int64 // ms; 0: off
	maxClients             atomic.Int64
	maxBufferedBytes       atomic.Int64
	maxUnauthBufferedBytes atomic.Int64
}

// Redis's defaults of the settings it has and we keep.
const (
	defaultSlowlogSlowerThan = 10000
	defaultSlowlogMaxLen     = 128
)

const statShards = 16

// statShard counts the commands of the clients whose id falls in it.
type statShard struct {
	cmds         []cmdStat
	hits, misses atomic.Int64 // keyspace_hits, keyspace_misses
	_            [64]byte
}

type cmdStat struct {
	calls, nanos, rejected, failed atomic.Int64
}

func (x *introspection) shard(id int64) *statShard { return &x.stats[uint64(id)%statShards] }

// totals sums a command's counts over the shards.
func (x *introspection) totals(id int) (calls, nanos, rejected, failed int64) {
	for i := range x.stats {
		c := &x.stats[i].cmds[id]
		calls += c.calls.Load()
		nanos += c.nanos.Load()
		rejected += c.rejected.Load()
		failed += c.failed.Load()
	}
	return
}

func (x *introspection) totalCalls() int64 {
	var n int64
	for i := range x.stats {
		for j := range x.stats[i].cmds {
			n += x.stats[i].cmds[j].calls.Load()
		}
	}
	return n
}

// initIntrospection sets the counters and settings up, once the Config
// is final, and applies the settings of the configuration file.
func (s *Server) initIntrospection() error {
	x := &s.x
	x.started = time.Now()
	x.tick()
	for i := range x.stats {
		x.stats[i].cmds = make([]cmdStat, commandCount)
	}
	x.errCounts = map[string]int64{}
	x.live.maxMemory.Store(int64(s.cfg.MaxMemory))
	x.live.slowlogSlowerThan.Store(defaultSlowlogSlowerThan)
	x.live.slowlogMaxLen.Store(defaultSlowlogMaxLen)
	x.live.maxClients.Store(int64(s.cfg.MaxClients))
	x.live.maxBufferedBytes.Store(s.cfg.MaxBufferedBytes)
	x.live.maxUnauthBufferedBytes.Store(s.cfg.MaxUnauthBufferedBytes)
	x.registry.clients = map[int64]*connection{}
	x.configFile = s.cfg.ConfigFile
	x.keysLoaded = int64(s.store.lenAll())
	x.mem.mapped = &s.store.mapped
	x.mem.init()
	if err := s.applySettings(); err != nil {
		return err
	}
	x.cronStop = make(chan struct{})
	x.cronDone = make(chan struct{})
	go s.cron()
	return nil
}

// cron samples the rates INFO reports, ten times a second as Redis's
// serverCron, and keeps the memory figure fresh.
func (s *Server) cron() {
	defer close(s.x.cronDone)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.x.cronStop:
			return
		case <-tick.C:
			s.x.tick()
			in, out := s.netTotals()
			s.x.ops.sample(s.x.totalCalls(), in, out)
			s.x.mem.refresh()
		}
	}
}

func (s *Server) stopCron() {
	select {
	case <-s.x.cronStop:
	default:
		close(s.x.cronStop)
	}
	<-s.x.cronDone
}

// keyspaceStats sums keyspace_hits and keyspace_misses.
func (x *introspection) keyspaceStats() (hits, misses int64) {
	for i := range x.stats {
		hits += x.stats[i].hits.Load()
		misses += x.stats[i].misses.Load()
	}
	return
}

// clock is the seconds since the server started, the keys' access time,
// and unix the time in seconds: both as of the cron's last tick, at most
// 100 ms old, so that a command reads no clock for them.
func (x *introspection) clock() uint32 { return x.coarseClock.Load() }

func (x *introspection) unix() int64 { return x.coarseUnix.Load() }

func (x *introspection) tick() {
	now := time.Now()
	x.coarseClock.Store(uint32(now.Sub(x.started) / time.Second))
	x.coarseUnix.Store(now.Unix())
}

// call runs a command that passed every check, timed, and counts it.
//
// A clock read costs 27 ns on the VMs measured (kvm-clock), a third of a
// pipelined BF.EXISTS: so a command's time runs from the end of the
// command before it in the same batch (sess.lastEnd: its parsing counts
// as its time), and only a batch's first command reads the clock twice.
func (s *Server) call(sess *session, w replier, c *command, args [][]byte) {
	if c.meta.first > 0 {
		s.touchKeys(sess, c, args)
	}
	info := sess.info
	if info != nil && info.lastCmd.Load() != int32(c.id+1) {
		info.lastCmd.Store(int32(c.id + 1))
	}
	start := sess.lastEnd
	if start == 0 {
		start = nanotime()
	}
	c.run(s, sess, w, args)
	end := nanotime()
	sess.lastEnd = end
	d := end - start
	p := &sess.counts
	if p.cmd != c.id+1 {
		s.flushCounts(sess)
		p.cmd = c.id + 1
	}
	p.calls++
	p.nanos += d
	if rw, ok := w.(*replyWriter); ok {
		if rw.errs > sess.prevErrs {
			s.x.shard(sess.id).cmds[c.id].failed.Add(1)
		}
		sess.prevErrs = rw.errs
	}
	if sess.client == nil {
		s.flushCounts(sess)
	}
	if info != nil {
		multi := int32(-1)
		if sess.multi != nil {
			multi = int32(len(sess.multi.cmds))
		}
		if info.multi.Load() != multi {
			info.multi.Store(multi)
		}
	}
	if d > memoryStaleAfter && c.meta.flags&cmdDenyOOM != 0 {
		s.x.mem.stale() // it may have allocated much
	}
	us := d / 1000
	if slower := s.x.live.slowlogSlowerThan.Load(); slower >= 0 && us >= slower && c.meta.flags&cmdSkipSlowlog == 0 {
		s.x.slowlog.add(s, sess, c, args, us)
	}
	if t := s.x.live.latencyThreshold.Load(); t > 0 && d/1e6 >= t {
		event := "command"
		if c.meta.flags&cmdFast != 0 {
			event = "fast-command"
		}
		s.x.latency.add(event, d/1e6)
	}
}

// pendingCounts are a session's counts of the commands of its batch,
// added to the shared counters (locked instructions, a tenth of a
// pipelined BF.EXISTS's CPU when done per command) when the batch's
// replies are sent, when it runs another command, and after a command
// off the loop.
type pendingCounts struct {
	cmd          int // the command's id + 1; 0 for none
	calls, nanos int64
	hits, misses int64
}

// flushCounts adds a session's pending counts to the shared ones.
func (s *Server) flushCounts(sess *session) {
	p := &sess.counts
	if p.calls == 0 && p.hits == 0 && p.misses == 0 {
		return
	}
	sh := s.x.shard(sess.id)
	if p.calls > 0 {
		st := &sh.cmds[p.cmd-1]
		st.calls.Add(p.calls)
		st.nanos.Add(p.nanos)
	}
	if p.hits > 0 {
		sh.hits.Add(p.hits)
	}
	if p.misses > 0 {
		sh.misses.Add(p.misses)
	}
	*p = pendingCounts{cmd: p.cmd}
}

// rejected counts a command refused before it ran (its arity, ACL,
// memory).
func (s *Server) rejected(sess *session, w replier, c *command) {
	s.x.shard(sess.id).cmds[c.id].rejected.Add(1)
	if rw, ok := w.(*replyWriter); ok {
		sess.prevErrs = rw.errs
	}
}

// countError counts an error reply by its code, the first word of its
// text, for INFO errorstats; at most maxErrorCodes codes are kept, as in
// Redis.
func (x *introspection) countError(msg string) {
	x.errTotal.Add(1)
	code := msg
	if i := strings.IndexByte(msg, ' '); i >= 0 {
		code = msg[:i]
	}
	x.errMu.Lock()
	if _, ok := x.errCounts[code]; ok || len(x.errCounts) < maxErrorCodes {
		x.errCounts[code]++
	}
	x.errMu.Unlock()
}

const maxErrorCodes = 128

// resetStats is CONFIG RESETSTAT.
func (s *Server) resetStats() {
	x := &s.x
	for i := range x.stats {
		for j := range x.stats[i].cmds {
			c := &x.stats[i].cmds[j]
			c.calls.Store(0)
			c.nanos.Store(0)
			c.rejected.Store(0)
			c.failed.Store(0)
		}
	}
	x.errMu.Lock()
	clear(x.errCounts)
	x.errMu.Unlock()
	x.errTotal.Store(0)
	x.connectionsReceived.Store(0)
	x.rejectedConnections.Store(0)
	for i := range x.stats {
		x.stats[i].hits.Store(0)
		x.stats[i].misses.Store(0)
	}
	for i := range x.aclDenied {
		x.aclDenied[i].Store(0)
	}
	x.netIn.Store(0)
	x.netOut.Store(0)
	x.registry.each(func(c *connection) {
		c.sess.info.netIn.Store(0)
		c.sess.info.netOut.Store(0)
	})
	x.ops.reset()
	x.mem.resetPeak()
	x.resetAt.Store(time.Now().Unix())
}

// netTotals is the bytes read and written, closed connections included.
func (s *Server) netTotals() (in, out int64) {
	in, out = s.x.netIn.Load(), s.x.netOut.Load()
	s.x.registry.each(func(c *connection) {
		in += c.sess.info.netIn.Load()
		out += c.sess.info.netOut.Load()
	})
	return in, out
}

// opsMeter keeps the last 16 samples of the commands and bytes counted,
// for INFO's instantaneous rates (Redis's STATS_METRIC_SAMPLES).
type opsMeter struct {
	mu      sync.Mutex
	samples [16]struct {
		at               int64
		calls, in, out   int64
		dCalls, dIn, dOt float64 // per second since the previous sample
	}
	idx  int
	n    int
	last struct{ at, calls, in, out int64 }
}

func (m *opsMeter) sample(calls int64, in, out int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := nanotime()
	if m.last.at != 0 && now > m.last.at {
		dt := float64(now-m.last.at) / 1e9
		s := &m.samples[m.idx]
		s.dCalls = float64(calls-m.last.calls) / dt
		s.dIn = float64(in-m.last.in) / dt
		s.dOt = float64(out-m.last.out) / dt
		m.idx = (m.idx + 1) % len(m.samples)
		m.n = min(m.n+1, len(m.samples))
	}
	m.last.at, m.last.calls, m.last.in, m.last.out = now, calls, in, out
}

// rates are the mean rates over the samples: commands a second, bytes
// in and out a second.
func (m *opsMeter) rates() (ops, in, out float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == 0 {
		return 0, 0, 0
	}
	for i := range m.n {
		s := &m.samples[i]
		ops += s.dCalls
		in += s.dIn
		out += s.dOt
	}
	n := float64(m.n)
	return ops / n, in / n, out / n
}

func (m *opsMeter) reset() {
	m.mu.Lock()
	m.n, m.idx = 0, 0
	m.last.at = 0
	m.mu.Unlock()
}

// Slowlog: Redis's, entries of at most 32 arguments of at most 128 bytes.
const (
	slowlogMaxArgs  = 32
	slowlogMaxBytes = 128
)

type slowlogEntry struct {
	id, time, micros int64
	args             []string
	peer, name       string
}

// slowlog holds the newest entries in a ring: an entry goes in at a
// constant cost however long the log may be (inserting at the front of a
// slice moved the whole log for each command logged: with 12,000 entries,
// a batch of small commands held the event loop seconds).
type slowlog struct {
	mu sync.Mutex
	// ring holds the entries oldest first from start on, wrapping; it is
	// wrapped (start > 0) only while it holds the most entries allowed.
	ring   []slowlogEntry
	start  int
	nextID int64
}

// put adds e, the newest, keeping at most max entries. Under l.mu.
func (l *slowlog) put(e slowlogEntry, max int64) {
	if int64(len(l.ring)) > max || l.start > 0 && int64(len(l.ring)) < max {
		l.keepLocked(max) // max changed since the ring wrapped
	}
	if int64(len(l.ring)) < max {
		l.ring = append(l.ring, e)
		return
	}
	l.ring[l.start] = e // over the oldest
	l.start = (l.start + 1) % len(l.ring)
}

// newest returns up to n entries, newest first (all for n < 0).
func (l *slowlog) newest(n int64) []slowlogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 || n > int64(len(l.ring)) {
		n = int64(len(l.ring))
	}
	out := make([]slowlogEntry, n)
	for i := range out {
		out[i] = l.ring[(l.start+len(l.ring)-1-i)%len(l.ring)]
	}
	return out
}

func (l *slowlog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ring)
}

func (l *slowlog) reset() {
	l.mu.Lock()
	l.ring, l.start = nil, 0
	l.mu.Unlock()
}

// keepLocked keeps the newest max entries, oldest first from the ring's
// start. Under l.mu.
func (l *slowlog) keepLocked(max int64) {
	n := min(int64(len(l.ring)), max)
	kept := make([]slowlogEntry, 0, n)
	for i := int64(len(l.ring)) - n; i < int64(len(l.ring)); i++ {
		kept = append(kept, l.ring[(l.start+int(i))%len(l.ring)])
	}
	l.ring, l.start = kept, 0
}

func (l *slowlog) add(s *Server, sess *session, c *command, args [][]byte, us int64) {
	max := s.x.live.slowlogMaxLen.Load()
	if max <= 0 {
		return
	}
	n := min(len(args), slowlogMaxArgs)
	e := slowlogEntry{time: time.Now().Unix(), micros: us, args: make([]string, n)}
	redact := redactedArgs(c, args)
	for j := range n {
		switch {
		case n != len(args) && j == n-1:
			e.args[j] = "... (" + itoa(len(args)-n+1) + " more arguments)"
		case redact(j):
			e.args[j] = "(redacted)"
		case len(args[j]) > slowlogMaxBytes:
			e.args[j] = string(args[j][:slowlogMaxBytes]) + "... (" + itoa(len(args[j])-slowlogMaxBytes) + " more bytes)"
		default:
			e.args[j] = string(args[j])
		}
	}
	if sess.client != nil {
		e.peer = sess.client.addr
	}
	if sess.info != nil {
		e.name = sess.info.name()
	}
	l.mu.Lock()
	e.id = l.nextID
	l.nextID++
	l.put(e, max)
	l.mu.Unlock()
}

// trim drops the entries past max, the oldest (CONFIG SET
// slowlog-max-len).
func (l *slowlog) trim(max int64) {
	l.mu.Lock()
	if int64(len(l.ring)) > max {
		l.keepLocked(max)
	}
	l.mu.Unlock()
}

// redactedArgs says which arguments Redis hides from the slowlog (and
// from the ACL log): passwords, and what ACL SETUSER says of users.
func redactedArgs(c *command, args [][]byte) func(int) bool {
	switch c.name {
	case "auth":
		return func(j int) bool { return j >= 1 }
	case "hello":
		hidden := map[int]bool{}
		for j := 2; j+2 < len(args); j++ {
			if eq(args[j], "AUTH") {
				hidden[j+1], hidden[j+2] = true, true
				j += 2
			} else if eq(args[j], "SETNAME") {
				j++
			}
		}
		return func(j int) bool { return hidden[j] }
	case "acl|setuser", "acl|deluser", "acl|getuser":
		return func(j int) bool { return j >= 2 }
	case "config|set":
		return func(j int) bool {
			return j >= 3 && j%2 == 1 && (eq(args[j-1], "requirepass") || eq(args[j-1], "masterauth"))
		}
	}
	return func(int) bool { return false }
}

// latencyMonitor is Redis's: per event, the last 160 samples, one a
// second at most (the worst of that second), and the all-time worst.
type latencyMonitor struct {
	mu     sync.Mutex
	events map[string]*latencySeries
}

const latencySamples = 160

type latencySeries struct {
	samples [latencySamples]struct{ time, ms int64 }
	idx     int
	max     int64
}

func (m *latencyMonitor) add(event string, ms int64) {
	now := time.Now().Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencySeries{}
	}
	ts := m.events[event]
	if ts == nil {
		ts = &latencySeries{}
		m.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	prev := (ts.idx + latencySamples - 1) % latencySamples
	if ts.samples[prev].time == now {
		ts.samples[prev].ms = max(ts.samples[prev].ms, ms)
		return
	}
	ts.samples[ts.idx].time, ts.samples[ts.idx].ms = now, ms
	ts.idx = (ts.idx + 1) % latencySamples
}

// clientRegistry holds the open connections, for CLIENT LIST and KILL,
// ACL DELUSER and INFO.
type clientRegistry struct {
	mu      sync.RWMutex
	clients map[int64]*connection
}

func (r *clientRegistry) add(c *connection) {
	r.mu.Lock()
	r.clients[c.sess.id] = c
	r.mu.Unlock()
}

func (r *clientRegistry) remove(c *connection) {
	r.mu.Lock()
	delete(r.clients, c.sess.id)
	r.mu.Unlock()
}

// each calls f for every open connection, in the order of their ids.
func (r *clientRegistry) each(f func(c *connection)) {
	r.mu.RLock()
	all := make([]*connection, 0, len(r.clients))
	for _, c := range r.clients {
		all = append(all, c)
	}
	r.mu.RUnlock()
	slices.SortFunc(all, func(a, b *connection) int { return int(a.sess.id - b.sess.id) })
	for _, c := range all {
		f(c)
	}
}

func (r *clientRegistry) get(id int64) *connection {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.clients[id]
}

// clientInfo is what other goroutines may read of a connection: CLIENT
// LIST, CLIENT KILL, the ACL log.
type clientInfo struct {
	created time.Time
	laddr   string
	lastCmd atomic.Int32 // command id + 1; 0: none yet
	lastIO  atomic.Int64 // unix seconds of the last command
	flags   atomic.Uint32
	multi   atomic.Int32 // commands queued, -1 outside MULTI
	resp    atomic.Int32
	db      atomic.Int32
	netIn   atomic.Int64
	netOut  atomic.Int64
	held    atomic.Int64 // bytes of buffers it holds
	user    atomic.Pointer[aclUser]

	mu                            sync.Mutex
	cname, libName, libVer, uname string
}

// Client flags of CLIENT LIST.
const (
	clientUnixSocket uint32 = 1 << iota
	clientNoEvict
	clientNoTouch
)

func (i *clientInfo) name() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.cname
}

func (i *clientInfo) setName(n string) {
	i.mu.Lock()
	i.cname = n
	i.mu.Unlock()
}

func (i *clientInfo) setFlag(f uint32, on bool) {
	for {
		old := i.flags.Load()
		nw := old &^ f
		if on {
			nw |= f
		}
		if i.flags.CompareAndSwap(old, nw) {
			return
		}
	}
}

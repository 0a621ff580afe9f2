package server

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// INFO, as Redis 7.4's genRedisInfoString writes it, section by section,
// so that monitoring (Prometheus' redis_exporter, redis-cli --stat)
// reads it. Fields of what this server does not have (replication,
// scripts, forks, eviction) are there with Redis's values for an instance
// that does not use them.

// infoSections are the sections in Redis's order; "default" is all but
// commandstats and latencystats.
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication",
	"cpu", "modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace"}

var defaultInfoSections = map[string]bool{"server": true, "clients": true, "memory": true,
	"persistence": true, "stats": true, "replication": true, "cpu": true, "module_list": true,
	"errorstats": true, "cluster": true, "keyspace": true}

func cmdInfo(s *Server, _ *session, w replier, args [][]byte) {
	want := map[string]bool{}
	all := false
	if len(args) == 1 {
		want = defaultInfoSections
	}
	for _, a := range args[1:] {
		switch sec := strings.ToLower(string(a)); sec {
		case "default":
			for k := range defaultInfoSections {
				want[k] = true
			}
		case "all", "everything":
			all = true
		default:
			want[sec] = true
		}
	}
	w.WriteVerbatim(s.info(want, all))
}

// info is INFO's text for the sections asked.
func (s *Server) info(want map[string]bool, all bool) string {
	var b strings.Builder
	n := 0
	section := func(name string, write func(*strings.Builder)) {
		if !all && !want[name] && !(name == "modules" && want["module_list"]) {
			return
		}
		if n > 0 {
			b.WriteString("\r\n")
		}
		n++
		write(&b)
	}
	section("server", s.infoServer)
	section("clients", s.infoClients)
	section("memory", s.infoMemory)
	section("persistence", s.infoPersistenceSection)
	section("stats", s.infoStats)
	section("replication", s.infoReplication)
	section("cpu", infoCPU)
	section("modules", func(b *strings.Builder) {
		b.WriteString("# Modules\r\nmodule:name=" + moduleName + ",ver=" + itoa(moduleVersion) + ",api=1,filters=0,usedby=[],using=[],options=[handle-io-errors]\r\n")
	})
	section("commandstats", s.infoCommandStats)
	section("errorstats", s.infoErrorStats)
	section("latencystats", func(b *strings.Builder) { b.WriteString("# Latencystats\r\n") })
	section("cluster", func(b *strings.Builder) { b.WriteString("# Cluster\r\ncluster_enabled:0\r\n") })
	section("keyspace", func(b *strings.Builder) {
		b.WriteString("# Keyspace\r\n")
		for _, l := range s.keyspaceLines() {
			b.WriteString(l + "\r\n")
		}
	})
	return b.String()
}

// runID is the server's random id, as Redis's run_id.
var runID = genpass(160)

func (s *Server) infoServer(b *strings.Builder) {
	uptime := int64(time.Since(s.started).Seconds())
	_, port := listenerHostPort(s.tcpAddr.Load())
	exe, _ := os.Executable()
	now := time.Now()
	fmt.Fprintf(b, "# Server\r\n"+
		"redis_version:%s\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\n"+
		"redis_mode:standalone\r\nos:%s\r\narch_bits:%d\r\nmonotonic_clock:POSIX clock_gettime\r\n"+
		"multiplexing_api:%s\r\natomicvar_api:c11-builtin\r\ngcc_version:0.0.0\r\ngo_version:%s\r\n"+
		"process_id:%d\r\nprocess_supervised:no\r\nrun_id:%s\r\ntcp_port:%d\r\n"+
		"server_time_usec:%d\r\nuptime_in_seconds:%d\r\nuptime_in_days:%d\r\nhz:10\r\nconfigured_hz:10\r\n"+
		"lru_clock:%d\r\nexecutable:%s\r\nconfig_file:%s\r\nio_threads_active:0\r\n",
		Version, osName(), 32<<(^uint(0)>>63), multiplexingAPI(), runtime.Version(), os.Getpid(), runID, port,
		now.UnixMicro(), uptime, uptime/86400, now.Unix()&(1<<24-1), exe, s.x.configFile)
	for i, l := range s.listenerLines() {
		fmt.Fprintf(b, "listener%d:%s\r\n", i, l)
	}
}

// listenerLines describe the listeners as Redis's getListensInfoString,
// in its order: "name=tcp,bind=ADDR,port=PORT" (plaintext),
// "name=unix,bind=PATH", "name=tls,bind=ADDR,port=PORT".
func (s *Server) listenerLines() []string {
	var lines []string
	if host, port := listenerHostPort(s.tcpAddr.Load()); port > 0 {
		lines = append(lines, fmt.Sprintf("name=tcp,bind=%s,port=%d", host, port))
	}
	if path := s.unixPath.Load(); path != "" {
		lines = append(lines, "name=unix,bind="+path)
	}
	if host, port := listenerHostPort(s.tls.addr.Load()); port > 0 {
		lines = append(lines, fmt.Sprintf("name=tls,bind=%s,port=%d", host, port))
	}
	return lines
}

// listenerHostPort is a TCP listener's host and port; port 0 if a is nil
// or not host:port.
func listenerHostPort(a *net.Addr) (string, int) {
	if a == nil {
		return "", 0
	}
	host, port, err := splitHostPort((*a).String())
	if err != nil {
		return "", 0
	}
	return strings.Trim(host, "[]"), port
}

func splitHostPort(addr string) (string, int, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("no port in %q", addr)
	}
	p, err := strconv.Atoi(addr[i+1:])
	return addr[:i], p, err
}

func osName() string {
	if name := uname(); name != "" {
		return name
	}
	return runtime.GOOS + " " + runtime.GOARCH
}

func multiplexingAPI() string {
	if runtime.GOOS == "linux" && !servePerConnection {
		return "epoll"
	}
	return "goroutines"
}

func (s *Server) infoClients(b *strings.Builder) {
	fmt.Fprintf(b, "# Clients\r\nconnected_clients:%d\r\ncluster_connections:0\r\nmaxclients:%d\r\n"+
		"client_recent_max_input_buffer:0\r\nclient_recent_max_output_buffer:0\r\nblocked_clients:0\r\n"+
		"tracking_clients:0\r\npubsub_clients:0\r\nwatching_clients:0\r\nclients_in_timeout_table:0\r\n"+
		"total_watched_keys:0\r\ntotal_blocking_keys:0\r\ntotal_blocking_keys_on_nokey:0\r\n",
		s.clients.Load(), s.x.live.maxClients.Load())
}

// bytesToHuman is Redis's: 100B, 2.00K, 1.50M, ...
func bytesToHuman(n int64) string {
	d := float64(n)
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + "B"
	case n < 1<<20:
		return fmt.Sprintf("%.2fK", d/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.2fM", d/(1<<20))
	case n < 1<<40:
		return fmt.Sprintf("%.2fG", d/(1<<30))
	case n < 1<<50:
		return fmt.Sprintf("%.2fT", d/(1<<40))
	case n < 1<<60:
		return fmt.Sprintf("%.2fP", d/(1<<50))
	}
	return strconv.FormatInt(n, 10) + "B"
}

// memoryReport is what INFO memory and MEMORY STATS say.
type memoryReport struct {
	used, peak, startup, rss, dataset, clients, keys int64
	heapObjects, heapFree, heapReleased, total       int64
}

func (s *Server) memoryReport() memoryReport {
	m := s.x.mem.read()
	r := memoryReport{used: m.used, peak: s.x.mem.peak.Load(), startup: s.x.mem.startup,
		rss: processRSS(m), dataset: int64(s.store.sizeBytes()), clients: s.buffered.Load(),
		keys: int64(s.store.lenAll()), heapObjects: m.objects, heapFree: m.free, heapReleased: m.released, total: m.total}
	r.peak = max(r.peak, r.used)
	return r
}

func (s *Server) infoMemory(b *strings.Builder) {
	r := s.memoryReport()
	maxMemory := s.x.live.maxMemory.Load()
	overhead := max(r.used-r.dataset, 0)
	frag := ratio(r.rss, r.used)
	fmt.Fprintf(b, "# Memory\r\n"+
		"used_memory:%d\r\nused_memory_human:%s\r\nused_memory_rss:%d\r\nused_memory_rss_human:%s\r\n"+
		"used_memory_peak:%d\r\nused_memory_peak_human:%s\r\nused_memory_peak_perc:%.2f%%\r\n"+
		"used_memory_overhead:%d\r\nused_memory_startup:%d\r\nused_memory_dataset:%d\r\nused_memory_dataset_perc:%.2f%%\r\n"+
		"allocator_allocated:%d\r\nallocator_active:%d\r\nallocator_resident:%d\r\nallocator_muzzy:0\r\n"+
		"total_system_memory:%d\r\ntotal_system_memory_human:%s\r\n"+
		"used_memory_lua:31744\r\nused_memory_vm_eval:31744\r\nused_memory_lua_human:31.00K\r\nused_memory_scripts_eval:0\r\n"+
		"number_of_cached_scripts:0\r\nnumber_of_functions:0\r\nnumber_of_libraries:0\r\nused_memory_vm_functions:32768\r\n"+
		"used_memory_vm_total:64512\r\nused_memory_vm_total_human:63.00K\r\nused_memory_functions:184\r\n"+
		"used_memory_scripts:184\r\nused_memory_scripts_human:184B\r\n"+
		"maxmemory:%d\r\nmaxmemory_human:%s\r\nmaxmemory_policy:noeviction\r\n"+
		"allocator_frag_ratio:%.2f\r\nallocator_frag_bytes:%d\r\nallocator_rss_ratio:%.2f\r\nallocator_rss_bytes:%d\r\n"+
		"rss_overhead_ratio:%.2f\r\nrss_overhead_bytes:%d\r\nmem_fragmentation_ratio:%.2f\r\nmem_fragmentation_bytes:%d\r\n"+
		"mem_not_counted_for_evict:0\r\nmem_replication_backlog:0\r\nmem_total_replication_buffers:0\r\n"+
		"mem_clients_slaves:0\r\nmem_clients_normal:%d\r\nmem_cluster_links:0\r\nmem_aof_buffer:%d\r\n"+
		"mem_allocator:go-%s\r\nmem_overhead_db_hashtable_rehashing:0\r\nactive_defrag_running:0\r\n"+
		"lazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\n"+
		"used_memory_filters:%d\r\nmapped_data_files:%d\r\nmapped_data_bytes:%d\r\n",
		r.used, bytesToHuman(r.used), r.rss, bytesToHuman(r.rss),
		r.peak, bytesToHuman(r.peak), 100*ratio(r.used, r.peak),
		overhead, r.startup, r.dataset, 100*ratio(r.dataset, max(r.used-r.startup, 1)),
		r.heapObjects, r.total-r.heapReleased-r.heapFree, r.total-r.heapReleased,
		totalSystemMemory(), bytesToHuman(totalSystemMemory()),
		maxMemory, bytesToHuman(maxMemory),
		ratio(r.total-r.heapReleased-r.heapFree, r.heapObjects), r.total-r.heapReleased-r.heapFree-r.heapObjects,
		ratio(r.total-r.heapReleased, r.total-r.heapReleased-r.heapFree), r.heapFree,
		ratio(r.rss, r.total-r.heapReleased), r.rss-(r.total-r.heapReleased),
		frag, r.rss-r.used,
		r.clients, s.aofBuffered(),
		runtime.Version(), r.dataset, s.store.mapped.files.Load(), s.store.mapped.bytes.Load())
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func (s *Server) aofBuffered() int64 {
	if l := s.store.log; l != nil {
		return l.buffered.Load()
	}
	return 0
}

// infoPersistenceSection writes Persistence: Redis's fields for the
// snapshot (ohbloom's saves) and the append-only log, then ohbloom's own.
func (s *Server) infoPersistenceSection(b *strings.Builder) {
	st := s.store
	aof, status, policy, gen := 0, "ok", "", uint64(0)
	if l := st.log; l != nil {
		aof, policy, gen = 1, l.policy().String(), l.currentGen()
		if l.refusing() {
			status = "err"
		}
	}
	fmt.Fprintf(b, "# Persistence\r\nloading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\n"+
		"current_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\n"+
		"rdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:%d\r\nrdb_last_save_time:%d\r\nrdb_last_bgsave_status:ok\r\n"+
		"rdb_last_bgsave_time_sec:-1\r\nrdb_current_bgsave_time_sec:-1\r\nrdb_saves:0\r\nrdb_last_cow_size:0\r\n"+
		"rdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:%d\r\n"+
		"aof_enabled:%d\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\naof_last_rewrite_time_sec:-1\r\n"+
		"aof_current_rewrite_time_sec:-1\r\naof_last_bgrewrite_status:ok\r\naof_rewrites:0\r\naof_rewrites_consecutive_failures:0\r\n"+
		"aof_last_write_status:%s\r\naof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
		boolInt(st.bgsave.Load()), st.lastSave.Load(), s.x.keysLoaded, aof, status)
	if l := st.log; l != nil {
		fmt.Fprintf(b, "aof_fsync:%s\r\naof_current_segment:%d\r\n", policy, gen)
		l.infoSpace(b) // aof_buffer_length, aof_space_reserved
	}
	n, bytes := st.uploads.usage()
	fmt.Fprintf(b, "loadchunk_uploads:%d\r\nloadchunk_upload_bytes:%d\r\n", n, bytes)
	n, bytes = st.dumps.usage()
	fmt.Fprintf(b, "scandump_dumps:%d\r\nscandump_dump_bytes:%d\r\n", n, bytes)
}

func (s *Server) infoStats(b *strings.Builder) {
	x := &s.x
	in, out := s.netTotals()
	ops, inRate, outRate := x.ops.rates()
	hits, misses := x.keyspaceStats()
	fmt.Fprintf(b, "# Stats\r\ntotal_connections_received:%d\r\ntotal_commands_processed:%d\r\ninstantaneous_ops_per_sec:%d\r\n"+
		"total_net_input_bytes:%d\r\ntotal_net_output_bytes:%d\r\ntotal_net_repl_input_bytes:0\r\ntotal_net_repl_output_bytes:0\r\n"+
		"instantaneous_input_kbps:%.2f\r\ninstantaneous_output_kbps:%.2f\r\ninstantaneous_input_repl_kbps:0.00\r\ninstantaneous_output_repl_kbps:0.00\r\n"+
		"rejected_connections:%d\r\nsync_full:0\r\nsync_partial_ok:0\r\nsync_partial_err:0\r\nexpired_subkeys:0\r\n"+
		"expired_keys:%d\r\nexpired_stale_perc:0.00\r\nexpired_time_cap_reached_count:0\r\nexpire_cycle_cpu_milliseconds:0\r\n"+
		"evicted_keys:0\r\nevicted_clients:0\r\nevicted_scripts:0\r\ntotal_eviction_exceeded_time:0\r\ncurrent_eviction_exceeded_time:0\r\n"+
		"keyspace_hits:%d\r\nkeyspace_misses:%d\r\npubsub_channels:0\r\npubsub_patterns:0\r\npubsubshard_channels:0\r\n"+
		"latest_fork_usec:0\r\ntotal_forks:0\r\nmigrate_cached_sockets:0\r\nslave_expires_tracked_keys:0\r\n"+
		"active_defrag_hits:0\r\nactive_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\n"+
		"total_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\ntracking_total_keys:0\r\ntracking_total_items:0\r\n"+
		"tracking_total_prefixes:0\r\nunexpected_error_replies:0\r\ntotal_error_replies:%d\r\ndump_payload_sanitizations:0\r\n"+
		"total_reads_processed:0\r\ntotal_writes_processed:0\r\nio_threaded_reads_processed:0\r\nio_threaded_writes_processed:0\r\n"+
		"client_query_buffer_limit_disconnections:0\r\nclient_output_buffer_limit_disconnections:0\r\n"+
		"reply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\neventloop_cycles:0\r\neventloop_duration_sum:0\r\n"+
		"eventloop_duration_cmd_sum:0\r\ninstantaneous_eventloop_cycles_per_sec:0\r\ninstantaneous_eventloop_duration_usec:0\r\n"+
		"acl_access_denied_auth:%d\r\nacl_access_denied_cmd:%d\r\nacl_access_denied_key:%d\r\nacl_access_denied_channel:%d\r\n",
		x.connectionsReceived.Load(), x.totalCalls(), int64(ops+0.5), in, out, inRate/1024, outRate/1024,
		x.rejectedConnections.Load(), s.expiredKeys(), hits, misses, x.errTotal.Load(),
		x.aclDenied[0].Load(), x.aclDenied[aclDeniedCmd].Load(), x.aclDenied[aclDeniedKey].Load(), x.aclDenied[aclDeniedChannel].Load())
}

func (s *Server) infoReplication(b *strings.Builder) {
	fmt.Fprintf(b, "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n"+
		"master_replid:%s\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:0\r\n"+
		"second_repl_offset:-1\r\nrepl_backlog_active:0\r\nrepl_backlog_size:1048576\r\n"+
		"repl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n", replID)
}

var replID = genpass(160)

func infoCPU(b *strings.Builder) {
	sys, user, csys, cuser := cpuTimes()
	fmt.Fprintf(b, "# CPU\r\nused_cpu_sys:%s\r\nused_cpu_user:%s\r\nused_cpu_sys_children:%s\r\nused_cpu_user_children:%s\r\n",
		sys, user, csys, cuser)
}

// infoCommandStats writes cmdstat_NAME:calls=,usec=,usec_per_call=,
// rejected_calls=,failed_calls= for each command (and subcommand, as
// "config|get") called or refused.
func (s *Server) infoCommandStats(b *strings.Builder) {
	b.WriteString("# Commandstats\r\n")
	for id := range commandCount {
		calls, nanos, rejected, failed := s.x.totals(id)
		if calls == 0 && rejected == 0 && failed == 0 {
			continue
		}
		us := nanos / 1000
		perCall := 0.0
		if calls > 0 {
			perCall = float64(us) / float64(calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			commandByID[id].name, calls, us, perCall, rejected, failed)
	}
}

func (s *Server) infoErrorStats(b *strings.Builder) {
	b.WriteString("# Errorstats\r\n")
	s.x.errMu.Lock()
	codes := make([]string, 0, len(s.x.errCounts))
	for c := range s.x.errCounts {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	for _, c := range codes {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", safeInfoString(c), s.x.errCounts[c])
	}
	s.x.errMu.Unlock()
}

// safeInfoString replaces what would break INFO's lines, as Redis's
// getSafeInfoString: ':' and spaces and line ends become '_'.
func safeInfoString(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ':', '\r', '\n', ' ', '\t':
			return '_'
		}
		return r
	}, s)
}

// memoryGauge measures the memory the process holds, from the Go
// runtime's own accounting (runtime/metrics): every byte the runtime has
// from the system and has not given back, but for free heap spans and
// the unused parts of spans, the analogue of the bytes jemalloc reports
// allocated to Redis. It is process-wide. A read costs about 0.5 µs, so
// the memory limit's check uses a figure at most memoryFresh old,
// refreshed by whichever command finds it older, and made stale at once
// by a command that took long (it may have allocated a filter).
type memoryGauge struct {
	mu      sync.Mutex
	samples []metrics.Sample
	last    atomic.Pointer[memSample]
	at      atomic.Int64 // nanotime of last
	peak    atomic.Int64
	startup int64
	// gcRunning: a collection started because the limit was reached runs.
	gcRunning atomic.Bool
	// mapped is the store's filters served from mapped data files: not
	// the runtime's memory, but the data's, so used_memory (and the
	// maxmemory limit) counts their bytes as it would the filters read
	// into memory.
	mapped *mappedCount
}

// memoryFresh is how old a measure the memory limit may act on;
// memoryStaleAfter how long a command that may add memory runs before
// its end makes the measure stale.
const (
	memoryFresh      = int64(time.Millisecond)
	memoryStaleAfter = int64(100 * time.Microsecond)
)

type memSample struct {
	used, objects, free, released, unused, total int64
}

var memMetrics = []string{
	"/memory/classes/total:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/objects:bytes",
}

func (g *memoryGauge) init() {
	g.samples = make([]metrics.Sample, len(memMetrics))
	for i, n := range memMetrics {
		g.samples[i].Name = n
	}
	m := g.refresh()
	g.startup = m.used
}

// refresh measures now.
func (g *memoryGauge) refresh() *memSample {
	g.mu.Lock()
	metrics.Read(g.samples)
	v := func(i int) int64 {
		if g.samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(g.samples[i].Value.Uint64())
	}
	m := &memSample{total: v(0), free: v(1), released: v(2), unused: v(3), objects: v(4)}
	g.mu.Unlock()
	m.used = m.total - m.free - m.released - m.unused
	if g.mapped != nil {
		m.used += g.mapped.bytes.Load()
	}
	g.last.Store(m)
	g.at.Store(nanotime())
	for {
		p := g.peak.Load()
		if m.used <= p || g.peak.CompareAndSwap(p, m.used) {
			break
		}
	}
	return m
}

// read is the last measure if it is fresh, else a new one.
func (g *memoryGauge) read() *memSample {
	if nanotime()-g.at.Load() > memoryFresh {
		return g.refresh()
	}
	return g.last.Load()
}

// stale makes the next read measure anew.
func (g *memoryGauge) stale() { g.at.Store(0) }

func (g *memoryGauge) resetPeak() { g.peak.Store(g.last.Load().used) }

// overMaxMemory reports whether the memory held is past maxmemory. When
// it is, a garbage collection starts in the background, so that memory
// held only by garbage stops counting (at most one at a time); the
// command asking is refused, as in Redis when memory cannot be freed.
func (s *Server) overMaxMemory() bool {
	max := s.x.live.maxMemory.Load()
	if max <= 0 {
		return false
	}
	g := &s.x.mem
	if g.read().used <= max {
		return false
	}
	if g.gcRunning.CompareAndSwap(false, true) {
		go func() {
			defer g.gcRunning.Store(false)
			runtime.GC()
			g.refresh()
		}()
	}
	return true
}

package server

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// TIME, ROLE, OBJECT, MEMORY, SLOWLOG, LATENCY and MODULE, as Redis 7.4
// answers them.

func cmdTime(_ *Server, _ *session, w replier, _ [][]byte) {
	now := time.Now()
	w.WriteArray(2)
	w.WriteBulkString(strconv.FormatInt(now.Unix(), 10))
	w.WriteBulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

// cmdRole is a master's ROLE: no replicas, offset 0.
func cmdRole(_ *Server, _ *session, w replier, _ [][]byte) {
	w.WriteArray(3)
	w.WriteBulkString("master")
	w.WriteInt64(0)
	w.WriteArray(0)
}

// OBJECT: a key's value is a module value, whose encoding Redis reports
// as "raw" and refcount as 1; its idle time is the seconds since a
// command last named it.

func objectLookup(s *Server, sess *session, w replier, key []byte) *entry {
	e := s.lookupKey(sess, key)
	sh := s.x.shard(sess.id)
	if e == nil {
		sh.misses.Add(1)
		w.WriteNull()
		return nil
	}
	sh.hits.Add(1)
	return e
}

func cmdObjectEncoding(s *Server, sess *session, w replier, args [][]byte) {
	if objectLookup(s, sess, w, args[2]) != nil {
		w.WriteBulkString("raw")
	}
}

func cmdObjectRefcount(s *Server, sess *session, w replier, args [][]byte) {
	if objectLookup(s, sess, w, args[2]) != nil {
		w.WriteInt64(1)
	}
}

func cmdObjectIdletime(s *Server, sess *session, w replier, args [][]byte) {
	if e := objectLookup(s, sess, w, args[2]); e != nil {
		w.WriteInt64(int64(s.x.clock() - e.access.Load()))
	}
}

// cmdObjectFreq: access frequencies are tracked only under an LFU policy,
// and the only policy here is noeviction.
func cmdObjectFreq(s *Server, sess *session, w replier, args [][]byte) {
	if objectLookup(s, sess, w, args[2]) != nil {
		w.WriteError("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	}
}

var objectHelp = []string{
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
}

// keyOverheadBytes is what a key costs beside its name and its filter:
// its entry and its place in the keyspace's map and index.
var keyOverheadBytes = int64(unsafe.Sizeof(entry{})) + 48

// cmdMemoryUsage is MEMORY USAGE key [SAMPLES n]: the filter's bytes,
// the key's name and what a key costs (SAMPLES is checked, and has
// nothing to sample).
func cmdMemoryUsage(s *Server, sess *session, w replier, args [][]byte) {
	for j := 3; j < len(args); j++ {
		if eq(args[j], "samples") && j+1 < len(args) {
			n, ok := parseInt(args[j+1])
			if !ok {
				w.WriteError("ERR value is not an integer or out of range")
				return
			}
			if n < 0 {
				w.WriteError("ERR syntax error")
				return
			}
			j++
			continue
		}
		w.WriteError("ERR syntax error")
		return
	}
	e := s.lookupKey(sess, args[2])
	if e == nil {
		w.WriteNull()
		return
	}
	w.WriteInt64(int64(e.sizeBytes()) + int64(len(args[2])) + keyOverheadBytes)
}

// cmdMemoryStats is MEMORY STATS, its fields Redis's.
func cmdMemoryStats(s *Server, _ *session, w replier, _ [][]byte) {
	r := s.memoryReport()
	overhead := max(r.used-r.dataset, 0)
	perKey := int64(0)
	if r.keys > 0 {
		perKey = (r.used - r.startup) / r.keys
	}
	lines := s.keyspaceLines()
	w.WriteMap(31 + len(lines))
	kv := func(k string, v int64) {
		w.WriteBulkString(k)
		w.WriteInt64(v)
	}
	kv("peak.allocated", r.peak)
	kv("total.allocated", r.used)
	kv("startup.allocated", r.startup)
	kv("replication.backlog", 0)
	kv("clients.slaves", 0)
	kv("clients.normal", r.clients)
	kv("cluster.links", 0)
	kv("aof.buffer", s.aofBuffered())
	kv("lua.caches", 0)
	kv("functions.caches", 184)
	for _, l := range lines {
		db, _, _ := strings.Cut(l, ":")
		w.WriteBulkString("db." + strings.TrimPrefix(db, "db"))
		w.WriteMap(2)
		kv("overhead.hashtable.main", r.keys*keyOverheadBytes)
		kv("overhead.hashtable.expires", 0)
	}
	kv("overhead.db.hashtable.lut", 0)
	kv("overhead.db.hashtable.rehashing", 0)
	kv("overhead.total", overhead)
	kv("db.dict.rehashing.count", 0)
	kv("keys.count", r.keys)
	kv("keys.bytes-per-key", perKey)
	kv("dataset.bytes", r.dataset)
	w.WriteBulkString("dataset.percentage")
	w.WriteDouble(100 * ratio(r.dataset, max(r.used-r.startup, 1)))
	w.WriteBulkString("peak.percentage")
	w.WriteDouble(100 * ratio(r.used, r.peak))
	active, resident := r.total-r.heapReleased-r.heapFree, r.total-r.heapReleased
	kv("allocator.allocated", r.heapObjects)
	kv("allocator.active", active)
	kv("allocator.resident", resident)
	kv("allocator.muzzy", 0)
	w.WriteBulkString("allocator-fragmentation.ratio")
	w.WriteDouble(ratio(active, r.heapObjects))
	kv("allocator-fragmentation.bytes", active-r.heapObjects)
	w.WriteBulkString("allocator-rss.ratio")
	w.WriteDouble(ratio(resident, active))
	kv("allocator-rss.bytes", resident-active)
	w.WriteBulkString("rss-overhead.ratio")
	w.WriteDouble(ratio(r.rss, resident))
	kv("rss-overhead.bytes", r.rss-resident)
	w.WriteBulkString("fragmentation")
	w.WriteDouble(ratio(r.rss, r.used))
	kv("fragmentation.bytes", r.rss-r.used)
}

// cmdMemoryDoctor is Redis's memory report for the conditions that apply
// here: an instance nearly empty, a peak far above the memory used, RSS
// far above it.
func cmdMemoryDoctor(s *Server, _ *session, w replier, _ [][]byte) {
	r := s.memoryReport()
	var issues []string
	empty := r.used < 5<<20
	if !empty {
		if ratio(r.peak, r.used) > 1.5 {
			issues = append(issues, " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n")
		}
		if ratio(r.rss, r.used) > 1.4 && r.rss-r.used > 10<<20 {
			issues = append(issues, " * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"go\".\n\n")
		}
		if n := s.clients.Load(); n > 0 && r.clients/n > 200<<10 {
			issues = append(issues, " * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n")
		}
	}
	switch {
	case empty:
		w.WriteVerbatim("Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n")
	case len(issues) == 0:
		w.WriteVerbatim("Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n")
	default:
		w.WriteVerbatim("Sam, I detected a few issues in this Redis instance memory implants:\n\n" + strings.Join(issues, "") + "I'm here to keep you safe, Sam. I want to help you.\n")
	}
}

// cmdMemoryPurge returns the free memory to the system.
func cmdMemoryPurge(s *Server, _ *session, w replier, _ [][]byte) {
	debug.FreeOSMemory()
	s.x.mem.refresh()
	w.WriteString("OK")
}

var memoryHelp = []string{
	"DOCTOR",
	"    Return memory problems reports.",
	"PURGE",
	"    Attempt to purge dirty pages for reclamation by the allocator.",
	"STATS",
	"    Return information about the memory usage of the server.",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
}

// cmdSlowlogGet is SLOWLOG GET [count]: id, time, microseconds,
// arguments, client address and name, newest first.
func cmdSlowlogGet(s *Server, _ *session, w replier, args [][]byte) {
	if len(args) > 3 {
		subcommandSyntaxError(w, args)
		return
	}
	count := int64(10)
	if len(args) == 3 {
		n, ok := parseInt(args[2])
		if !ok || n < -1 {
			w.WriteError("ERR count should be greater than or equal to -1")
			return
		}
		count = n
	}
	entries := s.x.slowlog.newest(count)
	w.WriteArray(len(entries))
	for _, e := range entries {
		w.WriteArray(6)
		w.WriteInt64(e.id)
		w.WriteInt64(e.time)
		w.WriteInt64(e.micros)
		w.WriteArray(len(e.args))
		for _, a := range e.args {
			w.WriteBulkString(a)
		}
		w.WriteBulkString(e.peer)
		w.WriteBulkString(e.name)
	}
}

func cmdSlowlogLen(s *Server, _ *session, w replier, _ [][]byte) {
	w.WriteInt64(int64(s.x.slowlog.len()))
}

func cmdSlowlogReset(s *Server, _ *session, w replier, _ [][]byte) {
	s.x.slowlog.reset()
	w.WriteString("OK")
}

var slowlogHelp = []string{
	"GET [<count>]",
	"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
	"    Entries are made of:",
	"    id, timestamp, time in microseconds, arguments array, client IP and port,",
	"    client name",
	"LEN",
	"    Return the length of the slowlog.",
	"RESET",
	"    Reset the slowlog.",
}

// LATENCY: the events are "command" and "fast-command", commands that
// took at least latency-monitor-threshold milliseconds (0: off).

func cmdLatencyLatest(s *Server, _ *session, w replier, _ [][]byte) {
	m := &s.x.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	names := sortedKeys(m.events)
	w.WriteArray(len(names))
	for _, name := range names {
		ts := m.events[name]
		last := ts.samples[(ts.idx+latencySamples-1)%latencySamples]
		w.WriteArray(4)
		w.WriteBulkString(name)
		w.WriteInt64(last.time)
		w.WriteInt64(last.ms)
		w.WriteInt64(ts.max)
	}
}

func cmdLatencyHistory(s *Server, _ *session, w replier, args [][]byte) {
	m := &s.x.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.events[string(args[2])]
	if ts == nil {
		w.WriteArray(0)
		return
	}
	n := 0
	for _, smp := range ts.samples {
		if smp.time != 0 {
			n++
		}
	}
	w.WriteArray(n)
	for j := range latencySamples {
		smp := ts.samples[(ts.idx+j)%latencySamples]
		if smp.time == 0 {
			continue
		}
		w.WriteArray(2)
		w.WriteInt64(smp.time)
		w.WriteInt64(smp.ms)
	}
}

func cmdLatencyReset(s *Server, _ *session, w replier, args [][]byte) {
	m := &s.x.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(args) == 2 {
		n := len(m.events)
		m.events = nil
		w.WriteInt64(int64(n))
		return
	}
	n := 0
	for _, a := range args[2:] {
		if _, ok := m.events[string(a)]; ok {
			delete(m.events, string(a))
			n++
		}
	}
	w.WriteInt64(int64(n))
}

// cmdLatencyDoctor is Redis's report, for the events kept here.
func cmdLatencyDoctor(s *Server, _ *session, w replier, _ [][]byte) {
	m := &s.x.latency
	m.mu.Lock()
	names := sortedKeys(m.events)
	var b strings.Builder
	if s.x.live.latencyThreshold.Load() == 0 && len(names) == 0 {
		b.WriteString("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n")
	} else if len(names) == 0 {
		b.WriteString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
	} else {
		b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
		for i, name := range names {
			ts := m.events[name]
			var n, sum, minT, maxT int64
			for _, smp := range ts.samples {
				if smp.time == 0 {
					continue
				}
				if n == 0 || smp.time < minT {
					minT = smp.time
				}
				maxT = max(maxT, smp.time)
				n++
				sum += smp.ms
			}
			avg := sum / max(n, 1)
			var mad int64
			for _, smp := range ts.samples {
				if smp.time != 0 {
					d := smp.ms - avg
					if d < 0 {
						d = -d
					}
					mad += d
				}
			}
			mad /= max(n, 1)
			period := float64(time.Now().Unix()-minT) / float64(max(n, 1))
			fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.\n",
				i+1, name, n, avg, mad, period, ts.max)
		}
		b.WriteString("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n")
	}
	m.mu.Unlock()
	w.WriteVerbatim(b.String())
}

var latencyHelp = []string{
	"DOCTOR",
	"    Return a human readable latency analysis report.",
	"HISTORY <event>",
	"    Return time-latency samples for the <event> class.",
	"LATEST",
	"    Return the latest latency samples for all events.",
	"RESET [<event> ...]",
	"    Reset latency data of one or more <event> classes.",
	"    (default: reset all data for all event classes)",
}

// cmdModuleList lists RedisBloom, whose commands are served.
func cmdModuleList(_ *Server, _ *session, w replier, _ [][]byte) { writeModules(w) }

var moduleHelp = []string{
	"LIST",
	"    Return a list of loaded modules.",
}

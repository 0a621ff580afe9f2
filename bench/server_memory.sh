#!/usr/bin/env bash
# Measures, through "ohbloom serve" itself, the memory and the false
# positive rate of the filters of the issue's memory table, and writes
# docs/data/server-memory.csv (columns in docs/charts.md, plus rss and
# ratio columns) with RedisBloom's figures beside them:
#
#   bench/server_memory.sh [out.csv] [port]
#
# Each row gets a fresh server: BF.RESERVE, then as many distinct items as
# the row says (BF.MADD, 1000 a command, pipelined), then BF.INFO SIZE, the
# process's RSS growth since before the reservation (VmRSS) and its peak
# (VmHWM), and the positives among absent items (BF.MEXISTS), enough of them
# that the rate is known to a few percent. RedisBloom's rows are its
# published measurements (RedisBloom 2.8.20 and 8.x in redis-server 7.4 on
# these machines) and, for the 0.1% filter grown to 8e6 items, which was not
# published, RedisBloom's own sizing formula as redisbloom.Filter
# reproduces it (docs/sizing.md; it matches the four published sizes to the
# byte).
#
# It times nothing, but takes the CPUs for about three minutes, so it runs
# under the shared lock: flock /tmp/ohbloom-bench.lock bench/server_memory.sh
# Needs redis-py (Debian: python3-redis) and redis-cli.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/data/server-memory.csv}
port=${2:-47410}
. bench/lib.sh
bench_work server-memory
bench_build

cat >"$work/head.csv" <<'EOF'
# bytes: BF.INFO SIZE after the adds; rss_growth_bytes: the server's VmRSS after the
# adds less before the reservation; rss_peak_bytes: its VmHWM; ratio: bytes over
# RedisBloom's for the same row. fpr_measured: after adding items distinct items.
# RedisBloom rows: published measurements (RedisBloom 2.8.20 in redis-server 7.4),
# or its sizing formula where none was published. ohbloom rows: bench/server_memory.sh.
server,capacity,error_rate,items,bytes,rss_growth_bytes,rss_peak_bytes,ratio,fpr_measured,source
redisbloom,1000000,0.01,1000000,1378568,,,1,0.005,published
redisbloom,1000000,0.001,1000000,1977632,,,1,,published
redisbloom,100000,0.0001,100000,257760,,,1,,published
redisbloom,1000000,0.01,8000000,26808792,,,1,0.0089,published
redisbloom,1000000,0.001,8000000,35794784,,,1,,RedisBloom's sizing formula (docs/sizing.md)
EOF
cp "$work/head.csv" "$work/out.csv"

# capacity rate items probes redisbloom_bytes
while read -r capacity rate items probes rb; do
  "$work/ohbloom" serve --addr "127.0.0.1:$port" 2>"$work/serve.log" &
  serve_pid=$!
  wait_ping "$port"
  # Debian's python3, where python3-redis installs, whatever else is first on PATH.
  /usr/bin/python3 - "$port" "$serve_pid" "$capacity" "$rate" "$items" "$probes" "$rb" >>"$work/out.csv" <<'EOF'
import sys
import redis

port, pid, capacity, rate, items, probes, rb = sys.argv[1:]
capacity, items, probes, rb = int(capacity), int(items), int(probes), int(rb)
r = redis.Redis(port=int(port))


def status(field):
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024


def batches(cmd, key, prefix, n):
    p = r.pipeline(transaction=False)
    queued = 0
    for start in range(0, n, 1000):
        p.execute_command(cmd, key, *[b"%s:%d" % (prefix, i) for i in range(start, min(n, start + 1000))])
        queued += 1
        if queued == 16:
            yield from p.execute()
            queued = 0
    yield from p.execute()


key = "m"
before = status("VmRSS")
r.execute_command("BF.RESERVE", key, rate, capacity)
for reply in batches("BF.MADD", key, b"item", items):
    assert not isinstance(reply, Exception), reply
size = r.execute_command("BF.INFO", key, "SIZE")[0]
growth = status("VmRSS") - before
peak = status("VmHWM")
positives = sum(sum(reply) for reply in batches("BF.MEXISTS", key, b"absent", probes))
print("ohbloom,%d,%s,%d,%d,%d,%d,%.3f,%.3g,measured over %d absent items"
      % (capacity, rate, items, size, growth, peak, size / rb, positives / probes, probes))
EOF
  kill "$serve_pid"
  wait "$serve_pid" 2>/dev/null || true
done <<'EOF'
1000000 0.01 1000000 2000000 1378568
1000000 0.001 1000000 10000000 1977632
100000 0.0001 100000 20000000 257760
1000000 0.01 8000000 2000000 26808792
1000000 0.001 8000000 10000000 35794784
EOF
mv "$work/out.csv" "$out"
cat "$out"

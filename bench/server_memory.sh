#!/usr/bin/env bash
# Measures the memory and the false positive rate of "ohbloom serve"'s
# filters for the reservations whose RedisBloom figures are published, and
# writes docs/data/server-memory.csv (columns in docs/charts.md) with
# RedisBloom's published rows beside them:
#
#   bench/server_memory.sh [out.csv] [port]
#
# For each BF.RESERVE it reads BF.INFO SIZE, the memory the reservation
# takes, then adds as many distinct items as the capacity (BF.MADD, 1000 a
# command) and counts the positives among absent items (BF.MEXISTS); the
# last case grows a reservation for 10^6 to 8·10^6 items and reads the size
# after the adds. It measures no time, so it needs no benchmark lock; it takes
# about two minutes. Needs redis-py (Debian: python3-redis).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/data/server-memory.csv}
port=${2:-47210}
work=$(mktemp -d /tmp/ohbloom-server-memory.XXXXXX)
cleanup() {
  kill "${serve_pid:-}" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/ohbloom" ./tools/cmd/ohbloom
"$work/ohbloom" serve --addr "127.0.0.1:$port" 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

# Debian's python3, where python3-redis installs, whatever else is first on PATH.
/usr/bin/python3 - "$port" >"$work/out.csv" <<'EOF'
import sys
import redis

r = redis.Redis(port=int(sys.argv[1]))
print("# bytes: BF.INFO SIZE of the reservation, or after the adds when items > capacity;")
print("# fpr_measured: after adding items distinct items. RedisBloom rows: its published")
print("# figures (RedisBloom 2.8.20 in redis-server 7.4). ohbloom rows: bench/server_memory.sh.")
print("server,capacity,error_rate,items,bytes,fpr_measured,source")
print("redisbloom,1000000,0.01,1000000,1378568,0.005,published")
print("redisbloom,1000000,0.001,1000000,1977632,,published")
print("redisbloom,100000,0.0001,100000,257760,,published")
print("redisbloom,1000000,0.01,8000000,26808792,0.0089,published")


def add(key, first, count):
    for start in range(first, first + count, 1000):
        end = min(first + count, start + 1000)
        r.execute_command("BF.MADD", key, *[b"item:%d" % i for i in range(start, end)])


def fpr(key, probes):
    positives = 0
    for start in range(0, probes, 1000):
        got = r.execute_command("BF.MEXISTS", key, *[b"absent:%d" % i for i in range(start, start + 1000)])
        positives += sum(got)
    return positives / probes


for capacity, rate, items, probes in [
    (1000000, 0.01, 1000000, 1000000),
    (1000000, 0.001, 1000000, 2000000),
    (100000, 0.0001, 100000, 10000000),
    (1000000, 0.01, 8000000, 1000000),
]:
    key = "m%d-%g-%d" % (capacity, rate, items)
    r.execute_command("BF.RESERVE", key, rate, capacity)
    size = r.execute_command("BF.INFO", key, "SIZE")[0]
    add(key, 0, items)
    if items > capacity:
        size = r.execute_command("BF.INFO", key, "SIZE")[0]
    print("ohbloom,%d,%g,%d,%d,%.3g,measured over %d absent items" % (capacity, rate, items, size, fpr(key, probes), probes))
EOF
mv "$work/out.csv" "$out"
cat "$out"

#!/usr/bin/env bash
# Checks INFO memory's used_memory against the process's RSS once "ohbloom
# serve" holds about 1 GB of filters (issue 29: within 5%), which is what
# maxmemory is compared with:
#
#   flock /tmp/ohbloom-bench.lock bench/server_used_memory.sh [filters] [port]
#
# A fresh server (no --dir) reserves `filters` (default 4) NONSCALING BF
# keys of 10^8 items at 0.01%, about 257 MB each, then redis-benchmark adds
# 4*10^6 random items to each, pipelined, which writes every page of every
# filter (RSS counts only the pages written). It prints, after the fill and
# again after MEMORY PURGE: used_memory, used_memory_rss, VmRSS of
# /proc/PID/status, the filters' bytes, and used_memory / RSS.
#
# It times nothing but takes both cores for a minute, so it runs under the
# shared lock. Needs redis-cli and redis-benchmark (Debian: redis-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
filters=${1:-4}
port=${2:-16490}
bench_work used-memory
bench_build
"$work/ohbloom" serve --addr "127.0.0.1:$port" 2>"$work/serve.log" &
serve_pid=$!
wait_ping "$port"
for i in $(seq "$filters"); do
  redis-cli -p "$port" BF.RESERVE "f$i" 0.0001 100000000 NONSCALING >/dev/null
  redis-benchmark -p "$port" -c 8 -P 64 -n 4000000 -r 1000000000 -q BF.ADD "f$i" __rand_int__ >/dev/null
done
report() {
  local info used rss vmrss filters
  info=$(redis-cli -p "$port" INFO memory | tr -d '\r')
  used=$(sed -n 's/^used_memory://p' <<<"$info")
  rss=$(sed -n 's/^used_memory_rss://p' <<<"$info")
  filters=$(sed -n 's/^used_memory_filters://p' <<<"$info")
  vmrss=$(awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$serve_pid/status")
  awk -v when="$1" -v u="$used" -v r="$rss" -v v="$vmrss" -v f="$filters" 'BEGIN {
    printf "%-12s used_memory %d  used_memory_rss %d  VmRSS %d  filters %d  used/RSS %.4f\n", when, u, r, v, f, u / v }'
}
report "filled"
redis-cli -p "$port" MEMORY PURGE >/dev/null
report "after PURGE"

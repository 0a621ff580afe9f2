#!/usr/bin/env bash
# Measures, through "ohbloom serve" itself, the memory and the false
# positive rate of its CF keys (RedisBloom's cuckoo filter) for the rows of
# docs/server.md's CF table: a fresh server, CF.RESERVE (or none: the first
# CF.ADD makes RedisBloom's default, capacity 1024), that many distinct
# items by CF.ADD (redis-cli --pipe), then CF.INFO (Size, sub-filters), the
# server's VmRSS growth since before the reservation, and the positives
# among 10^6 absent items (CF.MEXISTS of 1000 a command).
#
#   bench/server_cf_memory.sh [port]
#
# It times nothing, but takes the CPUs for a minute or two, so it runs
# under the shared lock: flock /tmp/ohbloom-bench.lock bench/server_cf_memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
port=${1:-47420}
bench_work cf-memory
bench_build

echo "| reserve | items | CF.INFO Size | bits an item | sub-filters | RSS growth | measured FPR (10^6 absent) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for row in "1000000|1000000" "1000000|2000000" "-|20000" "1000000 BUCKETSIZE 4|1000000"; do
  IFS='|' read -r reserve n <<<"$row"
  "$work/ohbloom" serve --addr "127.0.0.1:$port" --appendonly no 2>"$work/serve.log" &
  serve_pid=$!
  wait_ping "$port"
  before=$(rss_kb "$serve_pid")
  # shellcheck disable=SC2086
  [ "$reserve" = - ] || redis-cli -p "$port" CF.RESERVE k $reserve >/dev/null
  awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "*3\r\n$6\r\nCF.ADD\r\n$1\r\nk\r\n$%d\r\n%s\r\n", length("item:" i), "item:" i }' |
    redis-cli -p "$port" --pipe >/dev/null
  after=$(rss_kb "$serve_pid")
  size=$(redis-cli -p "$port" CF.INFO k | sed -n 2p)
  filters=$(redis-cli -p "$port" CF.INFO k | sed -n 6p)
  positives=$(awk 'BEGIN { for (c = 0; c < 1000; c++) { printf "CF.MEXISTS k"; for (i = 0; i < 1000; i++) printf " absent:%d", c * 1000 + i; printf "\n" } }' |
    redis-cli -p "$port" | grep -c '^1$' || true)
  kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
  awk -v r="$reserve" -v n="$n" -v s="$size" -v f="$filters" -v g="$(((after - before) * 1024))" -v p="$positives" \
    'BEGIN { printf "| `%s` | %d | %d | %.2f | %d | %d | %.3f%% |\n", (r == "-" ? "(CF.ADD default)" : "CF.RESERVE k " r), n, s, s * 8 / n, f, g, p / 1e4 }'
done

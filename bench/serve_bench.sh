#!/usr/bin/env bash
# Load-tests "ohbloom serve" with redis-benchmark (Debian's redis-tools) and,
# as the reference every Redis user knows, redis-server's own set commands
# (SADD, SISMEMBER) on the same random keys, in alternating rounds on the
# same machine. Prints one Markdown table of medians over the rounds.
#
#   bench/serve_bench.sh [rounds] [requests]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
requests=${2:-1000000}
work=$(mktemp -d /tmp/ohbloom-serve-bench.XXXXXX)
OHB_PORT=46400
REDIS_PORT=46401
cleanup() {
  kill "${serve_pid:-}" 2>/dev/null || true
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/ohbloom" ./tools/cmd/ohbloom
"$work/ohbloom" serve --addr "127.0.0.1:$OHB_PORT" --max-clients 1000 2>"$work/serve.log" &
serve_pid=$!
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --dir "$work" --logfile "$work/redis.log"
for port in "$OHB_PORT" "$REDIS_PORT"; do
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
redis-cli -p "$OHB_PORT" BF.RESERVE bench 0.01 1000000 >/dev/null

# name|port|pipeline|command...
cases=(
  "ohbloom BF.ADD|$OHB_PORT|16|BF.ADD bench __rand_int__"
  "redis SADD|$REDIS_PORT|16|SADD bench __rand_int__"
  "ohbloom BF.EXISTS|$OHB_PORT|16|BF.EXISTS bench __rand_int__"
  "redis SISMEMBER|$REDIS_PORT|16|SISMEMBER bench __rand_int__"
  "ohbloom BF.EXISTS, no pipelining|$OHB_PORT|1|BF.EXISTS bench __rand_int__"
  "redis SISMEMBER, no pipelining|$REDIS_PORT|1|SISMEMBER bench __rand_int__"
)
for round in $(seq "$rounds"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r name port pipe cmd <<<"$c"
    n=$requests
    [ "$pipe" = 1 ] && n=$((requests / 5))
    # shellcheck disable=SC2086
    redis-benchmark -p "$port" -c 50 -P "$pipe" -n "$n" -r 1000000 --csv $cmd |
      tail -n 1 | tr -d '"' | awk -F, -v name="$name" -v pipe="$pipe" '{print name "|" pipe "|" $2 "|" $5 "|" $7}' >>"$work/results"
  done
  echo "round $round of $rounds done" >&2
done

set_bytes=$(redis-cli -p "$REDIS_PORT" MEMORY USAGE bench SAMPLES 0)
set_items=$(redis-cli -p "$REDIS_PORT" SCARD bench)
bf_bytes=$(redis-cli -p "$OHB_PORT" BF.INFO bench SIZE)
bf_items=$(redis-cli -p "$OHB_PORT" BF.CARD bench)
echo "Memory after the runs: the Redis set holds $set_items members in $set_bytes bytes;"
echo "the ohbloom filter (reserved for 10^6 at 1%) $bf_items items in $bf_bytes bytes."
echo
echo "| command | pipeline | requests/s | p50 ms | p99 ms |"
echo "|---|---:|---:|---:|---:|"
for c in "${cases[@]}"; do
  IFS='|' read -r name _ _ _ <<<"$c"
  grep -F "$name|" "$work/results" | awk -F'|' -v want="$name" '$1 == want' |
    sort -t'|' -k3,3n | awk -F'|' -v rounds="$rounds" '
      { rps[NR] = $3; p50[NR] = $4; p99[NR] = $5; name = $1; pipe = $2 }
      END { m = int((NR + 1) / 2); printf "| %s | %s | %.0f | %s | %s |\n", name, pipe, rps[m], p50[m], p99[m] }'
done

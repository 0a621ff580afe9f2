#!/usr/bin/env bash
# What the append-only log costs "ohbloom serve" per BF.ADD: redis-benchmark
# (50 clients, random items from 10^6 into a filter reserved for 10^6 at 1%)
# against a server without the log (--appendonly no), with
# --appendfsync no (the kernel writes back), everysec (the default) and
# always, pipelined (-P 16)
# and not, in alternating rounds. The server's CPU is utime+stime from
# /proc over the run. Prints one Markdown table of medians over the rounds.
# Run it alone on the machine:
#
#   flock /tmp/ohbloom-bench.lock bench/serve_log_bench.sh [rounds] [requests]
#
# OHBLOOM_SERVERS="name=/path/to/ohbloom ..." compares several builds in
# the same run, one after the other in each case of each round (default:
# this tree's, built here). Port: OHBLOOM_BENCH_PORT (default 47150).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-3}
requests=${2:-1000000}
port=${OHBLOOM_BENCH_PORT:-47150}
bench_work log-bench
servers=$(bench_servers)
tck=$(getconf CLK_TCK)

# name|flags
modes=(
  "no log|--appendonly no"
  "no|--appendfsync no"
  "everysec|--appendfsync everysec"
  "always|--appendfsync always"
)
for round in $(seq "$rounds"); do
  for pipe in 16 1; do
    n=$requests
    [ "$pipe" = 1 ] && n=$((requests / 5))
    for m in "${modes[@]}"; do
      IFS='|' read -r name flags <<<"$m"
      for s in $servers; do
        sname=${s%%=*}
        bin=${s#*=}
        rm -rf "$work/data" && mkdir "$work/data"
        # shellcheck disable=SC2086
        "$bin" serve --addr "127.0.0.1:$port" --dir "$work/data" --save-interval -1s $flags 2>"$work/serve.log" &
        serve_pid=$!
        wait_ping "$port"
        redis-cli -p "$port" BF.RESERVE bench 0.01 1000000 >/dev/null
        run=$(cpu_run "$serve_pid" -p "$port" -P "$pipe" -n "$n" BF.ADD bench __rand_int__)
        sleep 1.2 # everysec writes within a second
        log_bytes=0
        for f in "$work"/data/appendonly-*.ohbl; do
          [ -f "$f" ] && log_bytes=$((log_bytes + $(stat -c %s "$f")))
        done
        kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
        # test,rps,avg,min,p50,p95,p99,max
        awk -F, -v s="$sname" -v name="$name" -v pipe="$pipe" -v t="${run%%|*}" -v tck="$tck" -v n="$n" -v lb="${log_bytes:-0}" \
          '{ printf "%s|%s|%s|%.0f|%.3f|%.1f|%s|%s\n", s, name, pipe, $2, t / tck / n * 1e6, lb / n, $5, $7 }' <<<"${run#*|}" >>"$work/results"
      done
    done
  done
  echo "round $round of $rounds done" >&2
done

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
column() { awk -F'|' -v s="$1" -v want="$2" -v p="$3" -v c="$4" '$1 == s && $2 == want && $3 == p {print $c}' "$work/results" | median; }
echo "| server | BF.ADD | pipeline | requests/s | p50 ms | p99 ms | server CPU µs/op | CPU vs no log | log bytes/op |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for pipe in 16 1; do
  for s in $servers; do
    sname=${s%%=*}
    base=$(column "$sname" "no log" "$pipe" 5)
    for m in "${modes[@]}"; do
      IFS='|' read -r name _ <<<"$m"
      awk -v s="$sname" -v name="$name" -v pipe="$pipe" -v rps="$(column "$sname" "$name" "$pipe" 4)" \
        -v cpu="$(column "$sname" "$name" "$pipe" 5)" -v lb="$(column "$sname" "$name" "$pipe" 6)" -v base="$base" \
        -v p50="$(column "$sname" "$name" "$pipe" 7)" -v p99="$(column "$sname" "$name" "$pipe" 8)" \
        'BEGIN { printf "| %s | %s | %s | %.0f | %s | %s | %.3f | %.2f | %.1f |\n", s, name, pipe, rps, p50, p99, cpu, cpu / base, lb }'
    done
  done
done
echo
echo "Raw rounds (server|mode|pipeline|requests/s|CPU µs/op|log bytes/op|p50 ms|p99 ms):"
cat "$work/results"

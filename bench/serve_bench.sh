#!/usr/bin/env bash
# Load-tests "ohbloom serve" with redis-benchmark (Debian's redis-tools) and,
# as the reference every Redis user knows, redis-server's own set commands
# (SADD, SISMEMBER) on the same random items, in alternating rounds on the
# same machine: 50 clients, items from 10^6 into a filter reserved for 10^6
# at 1%, pipelined 16 deep and not.
#
# Prints one Markdown table of medians over the rounds: requests/s, p50 and
# p99 latency, the server's own CPU time per command (utime+stime from
# /proc/PID/stat around each redis-benchmark run) with its ratio to
# redis-server's in the same round (the median of the rounds' ratios), and
# the server's peak RSS during the run (VmHWM, reset before each run).
# Writes every run, one row each, to docs/data/server.csv (the columns
# docs/charts.md describes), with a first line "# preliminary: ..." when
# the machine was busy at the start (1-minute load average >= 0.5).
#
#   flock /tmp/ohbloom-bench.lock bench/serve_bench.sh [rounds] [requests]
#
# requests is per pipelined run (default 1000000); unpipelined runs send a
# fifth of it. OHBLOOM_SERVERS="name=/path/to/ohbloom ..." compares several
# builds of ohbloom in the same run (default: this tree's, built here, named
# ohbloom); the CSV is then written only if OHBLOOM_CSV names a file.
# OHBLOOM_CSV=path writes it elsewhere. Ports: OHBLOOM_BENCH_PORT (default
# 46400) and up. OHBLOOM_BENCH_FAMILY=cf measures CF.ADD and CF.EXISTS on a
# cuckoo filter (CF.RESERVE bench 1000000, RedisBloom's defaults) instead
# of the BF commands, against the same SADD/SISMEMBER, and writes
# docs/data/server-cf.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-3}
requests=${2:-1000000}
bench_work serve-bench
base_port=${OHBLOOM_BENCH_PORT:-46400}
redis_port=$base_port
hz=$(getconf CLK_TCK)
load=$(awk '{print $1}' /proc/loadavg)

family=${OHBLOOM_BENCH_FAMILY:-bf}
csv=${OHBLOOM_CSV:-}
if [ -z "${OHBLOOM_SERVERS:-}" ]; then
  if [ "$family" = cf ]; then csv=${csv:-docs/data/server-cf.csv}; else csv=${csv:-docs/data/server.csv}; fi
fi
servers=$(bench_servers)

redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --dir "$work" --logfile "$work/redis.log" --pidfile "$work/redis.pid"
names=(redis)
ports=("$redis_port")
port=$redis_port
for s in $servers; do
  name=${s%%=*}
  bin=${s#*=}
  port=$((port + 1))
  "$bin" serve --addr "127.0.0.1:$port" --max-clients 1000 2>"$work/$name.log" &
  pids+=($!)
  names+=("$name")
  ports+=("$port")
done
for port in "${ports[@]}"; do wait_ping "$port"; done
redis_pid=$(cat "$work/redis.pid")
spids=("$redis_pid" "${pids[@]}")
for i in "${!names[@]}"; do
  [ "$i" = 0 ] && continue
  if [ "$family" = cf ]; then
    redis-cli -p "${ports[$i]}" CF.RESERVE bench 1000000 >/dev/null
  else
    redis-cli -p "${ports[$i]}" BF.RESERVE bench 0.01 1000000 >/dev/null
  fi
done

# peak_kb PID: VmHWM; reset_peak PID starts it again from the current RSS.
peak_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
reset_peak() { echo 5 >"/proc/$1/clear_refs" 2>/dev/null || true; }

# case|pipeline|ohbloom command|redis command
cases=(
  "add|16|BF.ADD bench __rand_int__|SADD bench __rand_int__"
  "test|16|BF.EXISTS bench __rand_int__|SISMEMBER bench __rand_int__"
  "add|1|BF.ADD bench __rand_int__|SADD bench __rand_int__"
  "test|1|BF.EXISTS bench __rand_int__|SISMEMBER bench __rand_int__"
)
if [ "$family" = cf ]; then
  cases=("${cases[@]//BF.ADD/CF.ADD}")
  cases=("${cases[@]//BF.EXISTS/CF.EXISTS}")
fi
order=("${!names[@]}")
for round in $(seq "$rounds"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r label pipe bcmd rcmd <<<"$c"
    n=$requests
    [ "$pipe" = 1 ] && n=$((requests / 5))
    for i in "${order[@]}"; do
      cmd=$bcmd
      [ "$i" = 0 ] && cmd=$rcmd
      reset_peak "${spids[$i]}"
      # shellcheck disable=SC2086
      run=$(cpu_run "${spids[$i]}" -p "${ports[$i]}" -P "$pipe" -n "$n" $cmd)
      # round|name|case|pipe|n|ticks|peak kB|command|test,rps,avg,min,p50,p95,p99,max
      echo "$round|${names[$i]}|$label|$pipe|$n|${run%%|*}|$(peak_kb "${spids[$i]}")|${cmd%% *}|${run#*|}" >>"$work/results"
    done
  done
  # Alternate which server goes first in each case.
  order=($(printf '%s\n' "${order[@]}" | tac))
  echo "round $round of $rounds done" >&2
done

echo "Server CPU per command = (utime+stime)/requests; ratio = that / redis-server's"
echo "SADD or SISMEMBER CPU per command in the same round; peak RSS = VmHWM during"
echo "the run. Medians of $rounds rounds; redis-benchmark -c 50 -r 1000000, $requests"
echo "requests pipelined, $((requests / 5)) not; 1-minute load average $load at the start."
echo
echo "| case | server | command | pipeline | requests/s | p50 ms | p99 ms | CPU µs/command | ratio to redis | peak RSS MB |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
awk -F'|' -v hz="$hz" "$awk_median"'
  { split($9, f, ",")
    key = $3 "|" $2 "|" $8 "|" $4
    cpu = $6 / hz * 1e6 / $5
    cpus[key] = cpus[key] " " cpu; rps[key] = rps[key] " " f[2]
    p50[key] = p50[key] " " f[5]; p99[key] = p99[key] " " f[7]; rss[key] = rss[key] " " $7 / 1024
    cpuOf[$1 "|" $3 "|" $2 "|" $4] = cpu
    if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
    rounds[$1] = 1
  }
  END {
    for (k = 1; k <= nk; k++) {
      split(keys[k], p, "|")
      ratios = ""
      for (r in rounds) {
        rk = r "|" p[1] "|redis|" p[4]
        if ((r "|" p[1] "|" p[2] "|" p[4]) in cpuOf && cpuOf[rk] > 0) ratios = ratios " " cpuOf[r "|" p[1] "|" p[2] "|" p[4]] / cpuOf[rk]
      }
      printf "| %s | %s | %s | %s | %.0f | %.3f | %.3f | %.2f | %.2f | %.1f |\n", p[1], p[2], p[3], p[4], median(rps[keys[k]]), median(p50[keys[k]]), median(p99[keys[k]]), median(cpus[keys[k]]), median(ratios), median(rss[keys[k]])
    }
  }' "$work/results" | sort -t'|' -k5,5r -k2,2 -k3,3

echo
if [ "$family" = cf ]; then
  echo "(the cuckoo filter, reserved for 10^6 items: $(redis-cli -p "${ports[1]}" CF.DEBUG bench))"
else
  echo "(the filter, reserved for 10^6 items at 1%, takes $(redis-cli -p "${ports[1]}" BF.INFO bench SIZE) bytes)"
fi

if [ -n "$csv" ]; then
  {
    if awk -v l="$load" 'BEGIN { exit !(l >= 0.5) }'; then
      echo "# preliminary: the machine was busy (1-minute load average $load at the start), so other processes shared its cores"
    fi
    echo "# bench/serve_bench.sh $rounds $requests: $rounds rounds alternating the servers; ohbloom serve at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- tools || echo '+changes'), $(redis-server --version | awk '{print $1, $3}' | tr -d 'v='); CPU = utime+stime of /proc/PID/stat, $((1000 / hz)) ms ticks; $(nproc) cores"
    echo "case,server,command,pipeline,clients,round,requests,requests_per_s,cpu_us_per_cmd,p50_ms,p99_ms"
    awk -F'|' -v hz="$hz" '{ split($9, f, ","); printf "%s,%s,%s,%s,50,%s,%s,%s,%.4f,%s,%s\n", $3, $2, $8, $4, $1, $5, f[2], $6 / hz * 1e6 / $5, f[5], f[7] }' "$work/results"
  } >"$csv"
  echo "wrote $csv" >&2
fi

#!/usr/bin/env bash
# Load-tests "ohbloom serve" with redis-benchmark (Debian's redis-tools) and,
# as the reference every Redis user knows, redis-server's own set commands
# (SADD, SISMEMBER) on the same random items, in alternating rounds on the
# same machine. Prints one Markdown table of medians over the rounds:
# requests/s, latency, and the server's own CPU time per command
# (utime+stime from /proc/PID/stat around each redis-benchmark run), with
# its ratio to redis-server's in the same round; then each server's peak
# RSS (VmHWM).
#
#   flock /tmp/ohbloom-bench.lock bench/serve_bench.sh [rounds] [requests]
#
# OHBLOOM_SERVERS="name=/path/to/ohbloom ..." compares several builds of
# ohbloom in the same run (default: this tree's, built here). Ports:
# OHBLOOM_BENCH_PORT (default 46400) and up.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
requests=${2:-1000000}
work=$(mktemp -d /tmp/ohbloom-serve-bench.XXXXXX)
base_port=${OHBLOOM_BENCH_PORT:-46400}
REDIS_PORT=$base_port
hz=$(getconf CLK_TCK)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

servers=${OHBLOOM_SERVERS:-}
if [ -z "$servers" ]; then
  (cd tools && go build -o "$work/ohbloom" ./cmd/ohbloom)
  servers="ohbloom=$work/ohbloom"
fi

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --dir "$work" --logfile "$work/redis.log" --pidfile "$work/redis.pid"
names=(redis)
ports=("$REDIS_PORT")
port=$REDIS_PORT
for s in $servers; do
  name=${s%%=*}
  bin=${s#*=}
  port=$((port + 1))
  "$bin" serve --addr "127.0.0.1:$port" --max-clients 1000 2>"$work/$name.log" &
  pids+=($!)
  names+=("$name")
  ports+=("$port")
done
for port in "${ports[@]}"; do
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
redis_pid=$(cat "$work/redis.pid")
spids=("$redis_pid" "${pids[@]}")
for i in "${!names[@]}"; do
  [ "$i" = 0 ] || redis-cli -p "${ports[$i]}" BF.RESERVE bench 0.01 1000000 >/dev/null
done

# cpu_ticks PID: utime+stime of the whole process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# case: label|pipeline|ohbloom command|redis command
cases=(
  "ADD|16|BF.ADD bench __rand_int__|SADD bench __rand_int__"
  "EXISTS|16|BF.EXISTS bench __rand_int__|SISMEMBER bench __rand_int__"
  "ADD|1|BF.ADD bench __rand_int__|SADD bench __rand_int__"
  "EXISTS|1|BF.EXISTS bench __rand_int__|SISMEMBER bench __rand_int__"
)
order=("${!names[@]}")
for round in $(seq "$rounds"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r label pipe bcmd rcmd <<<"$c"
    n=$requests
    [ "$pipe" = 1 ] && n=$((requests / 5))
    for i in "${order[@]}"; do
      cmd=$bcmd
      [ "$i" = 0 ] && cmd=$rcmd
      before=$(cpu_ticks "${spids[$i]}")
      # shellcheck disable=SC2086
      line=$(redis-benchmark -p "${ports[$i]}" -c 50 -P "$pipe" -n "$n" -r 1000000 --csv $cmd | tail -n 1 | tr -d '"')
      after=$(cpu_ticks "${spids[$i]}")
      echo "$round|${names[$i]}|$label|$pipe|$n|$((after - before))|$line" >>"$work/results"
    done
  done
  # Alternate which server goes first in each case.
  order=($(printf '%s\n' "${order[@]}" | tac))
  echo "round $round of $rounds done" >&2
done

echo "Server CPU per command = (utime+stime)/requests; ratio = that / redis-server's"
echo "SADD or SISMEMBER CPU per command in the same round (medians of $rounds rounds;"
echo "redis-benchmark -c 50 -r 1000000, $requests requests pipelined, $((requests / 5)) not)."
echo
echo "| server | command | pipeline | requests/s | p50 ms | CPU µs/command | ratio to redis |"
echo "|---|---|---:|---:|---:|---:|---:|"
awk -F'|' -v hz="$hz" '
  { # round|name|label|pipe|n|ticks|test,rps,avg,min,p50,p95,p99,max
    split($7, f, ",")
    key = $2 "|" $3 "|" $4
    cpu = $6 / hz * 1e6 / $5
    cpus[key] = cpus[key] " " cpu; rps[key] = rps[key] " " f[2]; p50[key] = p50[key] " " f[5]
    cpuOf[$1 "|" key] = cpu
    if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
    rounds[$1] = 1
  }
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    for (k = 1; k <= nk; k++) {
      split(keys[k], p, "|")
      ratios = ""
      for (r in rounds) {
        rk = r "|redis|" p[2] "|" p[3]
        if ((r "|" keys[k]) in cpuOf && cpuOf[rk] > 0) ratios = ratios " " cpuOf[r "|" keys[k]] / cpuOf[rk]
      }
      cmd = (p[1] == "redis") ? (p[2] == "ADD" ? "SADD" : "SISMEMBER") : "BF." p[2]
      printf "| %s | %s | %s | %.0f | %s | %.2f | %.2f |\n", p[1], cmd, p[3], median(rps[keys[k]]), median(p50[keys[k]]), median(cpus[keys[k]]), median(ratios)
    }
  }' "$work/results" | sort -t'|' -k4,4r -k3,3 -k2,2

echo
for i in "${!names[@]}"; do
  echo "${names[$i]}: peak RSS $(awk '/VmHWM/ {print $2, $3}' "/proc/${spids[$i]}/status")"
done
bf_bytes=$(redis-cli -p "${ports[1]}" BF.INFO bench SIZE)
echo "(the filter, reserved for 10^6 items at 1%, takes $bf_bytes bytes)"

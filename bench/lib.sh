# shellcheck shell=bash
# What the bench/*.sh scripts that run "ohbloom serve" share; they source it
# after cd to the repository's root:
#
#   . bench/lib.sh
#   bench_work NAME     # $work, removed at exit with the servers stopped
#   servers=$(bench_servers)
#   ... "$bin" serve ... & pids+=($!) ; wait_ping "$port"

pids=() # processes to kill at exit
redis_port= # a daemonized redis-server to shut down at exit

# bench_work NAME makes the scratch directory $work (/tmp/ohbloom-NAME.*)
# and, at exit, kills every process in pids and serve_pid, shuts down the
# redis-server of redis_port and removes $work.
bench_work() {
  work=$(mktemp -d "/tmp/ohbloom-$1.XXXXXX")
  trap bench_cleanup EXIT
}

bench_cleanup() {
  for p in "${pids[@]}" ${serve_pid:-}; do kill "$p" 2>/dev/null || true; done
  [ -z "$redis_port" ] || redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$work"
}

# bench_build builds this tree's ohbloom into $work/ohbloom.
bench_build() { (cd tools && go build -o "$work/ohbloom" ./cmd/ohbloom); }

# bench_servers prints OHBLOOM_SERVERS ("name=/path/to/ohbloom ..."), or
# builds this tree's ohbloom and prints "ohbloom=$work/ohbloom".
bench_servers() {
  if [ -n "${OHBLOOM_SERVERS:-}" ]; then
    echo "$OHBLOOM_SERVERS"
  else
    bench_build
    echo "ohbloom=$work/ohbloom"
  fi
}

# wait_ping PORT [redis-cli arguments...] waits up to 10 s for the server
# on PORT to answer PING.
wait_ping() {
  local port=$1
  shift
  for _ in $(seq 100); do
    redis-cli -p "$port" "$@" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
}

# cpu_ticks PID: utime+stime of the whole process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# cpu_run PID redis-benchmark-arguments... runs redis-benchmark -c 50
# -r 1000000 --csv with the arguments and prints the CPU ticks PID took
# over the run and redis-benchmark's last CSV line, unquoted:
# "ticks|test,rps,avg,min,p50,p95,p99,max".
cpu_run() {
  local pid=$1 before after line
  shift
  before=$(cpu_ticks "$pid")
  line=$(redis-benchmark -c 50 -r 1000000 --csv "$@" | tail -n 1 | tr -d '"')
  after=$(cpu_ticks "$pid")
  echo "$((after - before))|$line"
}

# rss_kb PID: the process's VmRSS in kB.
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

# awk_median is an awk function, median(list), of a list of numbers
# separated by spaces: prepend it to a program that calls it.
awk_median='
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }'

#!/usr/bin/env bash
# Counts the system calls and context switches per command of
# "ohbloom serve" and of redis-server (SISMEMBER/SADD) under the same
# redis-benchmark load, with perf's syscall tracepoints (cheap enough not
# to change the pattern, unlike strace). Prints one line per server and
# case: calls per command of read, write, epoll_wait/epoll_pwait, futex,
# nanosleep and in all, and context switches per command; and the server's
# CPU time per command (perf's task-clock: not the same run as
# serve_bench.sh's ratios, which come from alternating rounds).
#
#   flock /tmp/ohbloom-bench.lock bench/serve_syscalls.sh [requests]
#
# OHBLOOM_SERVERS="name=/path/to/ohbloom ..." as in serve_bench.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
requests=${1:-200000}
bench_work serve-sys
base_port=${OHBLOOM_BENCH_PORT:-46450}
servers=$(bench_servers)
events=task-clock,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,raw_syscalls:sys_enter,context-switches

measure() { # name pid port pipeline command...
  local name=$1 pid=$2 port=$3 pipe=$4
  shift 4
  perf stat -x, -e "$events" -p "$pid" -o "$work/perf" &
  local perf_pid=$!
  sleep 0.5
  redis-benchmark -p "$port" -c 50 -P "$pipe" -n "$requests" -r 1000000 -q "$@" >/dev/null
  kill -INT "$perf_pid"
  wait "$perf_pid" || true
  awk -F, -v name="$name" -v pipe="$pipe" -v n="$requests" -v cmd="$1" '
    /sys_enter_read/ { r = $1 } /sys_enter_write/ { w = $1 }
    /sys_enter_epoll/ { e += $1 } /sys_enter_futex/ { f = $1 } /nanosleep/ { s = $1 }
    /raw_syscalls/ { t = $1 } /context-switches/ { c = $1 } /task-clock/ { ms = $1 }
    END { printf "| %s | %s | %s | %.2f | %.2f | %.2f | %.3f | %.3f | %.3f | %.2f | %.3f |\n", name, cmd, pipe, ms*1000/n, r/n, w/n, e/n, f/n, s/n, t/n, c/n }' "$work/perf"
}

port=$base_port
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --dir "$work" --logfile "$work/redis.log" --pidfile "$work/redis.pid"
wait_ping "$port"
redis_pid=$(cat "$work/redis.pid")
echo "| server | command | pipeline | CPU µs | read | write | epoll_wait | futex | nanosleep | all syscalls | context switches |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for pipe in 1 16; do
  measure redis "$redis_pid" "$port" "$pipe" SISMEMBER bench __rand_int__
done
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
for s in $servers; do
  name=${s%%=*}
  bin=${s#*=}
  port=$((port + 1))
  "$bin" serve --addr "127.0.0.1:$port" 2>"$work/$name.log" &
  pid=$!
  pids+=("$pid")
  wait_ping "$port"
  redis-cli -p "$port" BF.RESERVE bench 0.01 1000000 >/dev/null
  for pipe in 1 16; do
    measure "$name" "$pid" "$port" "$pipe" BF.EXISTS bench __rand_int__
  done
  kill "$pid"
done

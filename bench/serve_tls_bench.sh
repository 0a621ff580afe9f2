#!/usr/bin/env bash
# What TLS costs "ohbloom serve" in CPU per command, beside Debian's
# redis-server with its own TLS, in alternating rounds on the same machine:
# redis-benchmark, 50 clients, BF.EXISTS of random items from 10^6 on a
# filter reserved for 10^6 at 1% against SISMEMBER on a set, both filled
# first with 10^6 random adds (about 632,000 distinct items); over TLS and
# over plaintext, pipelined 16 deep and not. Both servers take the same
# certificate (ECDSA P-256, made here with openssl), no client
# certificates (tls-auth-clients no), and redis-benchmark asks both for
# TLS 1.3 with TLS_AES_128_GCM_SHA256.
#
# Prints one Markdown table of medians over the rounds: requests/s, the
# server's CPU time per command (utime+stime from /proc/PID/stat around
# each redis-benchmark run) and its ratio to redis-server's on the same
# transport and pipeline in the same round (the median of the rounds'
# ratios).
#
#   flock /tmp/ohbloom-bench.lock bench/serve_tls_bench.sh [rounds] [requests]
#
# requests is per pipelined run (default 500000); unpipelined runs send a
# fifth of it. OHBLOOM_SERVERS="name=/path/to/ohbloom ..." compares several
# builds of ohbloom in the same run (default: this tree's, built here,
# named ohbloom): a build without --tls-port runs the plaintext cases only,
# which is how the plaintext cost is compared with an older build. Ports:
# OHBLOOM_BENCH_PORT (default 46500) and up, two per server.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-5}
requests=${2:-500000}
bench_work tls-bench
base_port=${OHBLOOM_BENCH_PORT:-46500}
redis_port=$base_port
hz=$(getconf CLK_TCK)
load=$(awk '{print $1}' /proc/loadavg)
servers=$(bench_servers)

# A CA and a server certificate for 127.0.0.1.
(
  cd "$work"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench-ca \
    -keyout ca.key -out ca.crt 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
    -keyout server.key -out server.csr 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\n' >ext
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile ext \
    -out server.crt 2>/dev/null
)
tls_server=(--tls-cert-file "$work/server.crt" --tls-key-file "$work/server.key" --tls-auth-clients no)
tls_client=(--tls --cacert "$work/ca.crt" --tls-ciphersuites TLS_AES_128_GCM_SHA256)

port=$base_port
redis-server --port "$port" --tls-port "$((port + 1))" "${tls_server[@]}" --bind 127.0.0.1 --save "" \
  --appendonly no --daemonize yes --dir "$work" --logfile "$work/redis.log" --pidfile "$work/redis.pid"
names=(redis)
ports=("$port")
has_tls=(1)
for s in $servers; do
  name=${s%%=*}
  bin=${s#*=}
  port=$((port + 2))
  if "$bin" serve --help 2>&1 | grep -q -- -tls-port; then
    "$bin" serve --addr "127.0.0.1:$port" --tls-port "$((port + 1))" "${tls_server[@]}" --max-clients 1000 \
      2>"$work/$name.log" &
    has_tls+=(1)
  else
    "$bin" serve --addr "127.0.0.1:$port" --max-clients 1000 2>"$work/$name.log" &
    has_tls+=(0)
  fi
  pids+=($!)
  names+=("$name")
  ports+=("$port")
done
for port in "${ports[@]}"; do wait_ping "$port"; done
for i in "${!names[@]}"; do
  [ "${has_tls[$i]}" = 0 ] || wait_ping "$((ports[i] + 1))" "${tls_client[@]:0:3}"
done
redis_pid=$(cat "$work/redis.pid")
spids=("$redis_pid" "${pids[@]}")
# The same 10^6 random adds into each, not measured.
redis-benchmark -p "${ports[0]}" -c 50 -P 16 -n 1000000 -r 1000000 -q SADD bench __rand_int__ >/dev/null
for i in "${!names[@]}"; do
  if [ "$i" != 0 ]; then
    redis-cli -p "${ports[$i]}" BF.RESERVE bench 0.01 1000000 >/dev/null
    redis-benchmark -p "${ports[$i]}" -c 50 -P 16 -n 1000000 -r 1000000 -q BF.ADD bench __rand_int__ >/dev/null
  fi
done
echo "redis-server's set holds $(redis-cli -p "${ports[0]}" SCARD bench) items" >&2

# transport|pipeline
cases=("tls|16" "plain|16" "tls|1" "plain|1")
order=("${!names[@]}")
for round in $(seq "$rounds"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r transport pipe <<<"$c"
    n=$requests
    [ "$pipe" = 1 ] && n=$((requests / 5))
    for i in "${order[@]}"; do
      p=${ports[$i]}
      extra=()
      if [ "$transport" = tls ]; then
        [ "${has_tls[$i]}" = 1 ] || continue
        p=$((p + 1))
        extra=("${tls_client[@]}")
      fi
      cmd="BF.EXISTS bench __rand_int__"
      [ "$i" = 0 ] && cmd="SISMEMBER bench __rand_int__"
      # shellcheck disable=SC2086
      run=$(cpu_run "${spids[$i]}" -p "$p" "${extra[@]}" -P "$pipe" -n "$n" $cmd)
      # round|name|transport|pipe|n|ticks|command|test,rps,...
      echo "$round|${names[$i]}|$transport|$pipe|$n|${run%%|*}|${cmd%% *}|${run#*|}" >>"$work/results"
    done
  done
  order=($(printf '%s\n' "${order[@]}" | tac))
  echo "round $round of $rounds done" >&2
done

echo "Server CPU per command = (utime+stime)/requests; ratio = that / redis-server's"
echo "SISMEMBER CPU per command on the same transport and pipeline in the same round."
echo "Medians of $rounds rounds; redis-benchmark -c 50 -r 1000000, $requests requests"
echo "pipelined, $((requests / 5)) not; $(redis-server --version | awk '{print $1, $3}' | tr -d 'v=');"
echo "1-minute load average $load at the start; $(nproc) cores."
echo
echo "| transport | pipeline | server | command | requests/s | CPU µs/command | ratio to redis |"
echo "|---|---:|---|---|---:|---:|---:|"
awk -F'|' -v hz="$hz" "$awk_median"'
  { split($8, f, ",")
    key = $3 "|" $4 "|" $2 "|" $7
    cpu = $6 / hz * 1e6 / $5
    cpus[key] = cpus[key] " " cpu; rps[key] = rps[key] " " f[2]
    cpuOf[$1 "|" $3 "|" $4 "|" $2] = cpu
    if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
    rounds[$1] = 1
  }
  END {
    for (k = 1; k <= nk; k++) {
      split(keys[k], p, "|")
      ratios = ""
      for (r in rounds) {
        rk = r "|" p[1] "|" p[2] "|redis"
        own = r "|" p[1] "|" p[2] "|" p[3]
        if (own in cpuOf && cpuOf[rk] > 0) ratios = ratios " " cpuOf[own] / cpuOf[rk]
      }
      printf "| %s | %s | %s | %s | %.0f | %.2f | %.2f |\n", p[1], p[2], p[3], p[4], median(rps[keys[k]]), median(cpus[keys[k]]), median(ratios)
    }
  }' "$work/results"
echo
echo "(every run, round|server|transport|pipeline|requests|ticks|command|redis-benchmark's CSV:)"
sed 's/^/    /' "$work/results"

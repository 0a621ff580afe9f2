#!/usr/bin/env bash
# How long "ohbloom serve" takes to refuse the clients its TLS port must
# refuse, and what they leave: a plaintext redis-cli on the TLS port,
# redis-cli --tls without a client certificate under --tls-auth-clients
# yes, redis-cli --tls on the plaintext port, and a client that connects
# to the TLS port and says nothing. Each is timed from its start to its
# exit (or, for the silent one, to the server's close), tries times;
# prints the medians and the slowest in ms, then the server's
# connected_clients and the CPU it used over all the tries.
#
#   flock /tmp/ohbloom-bench.lock bench/serve_tls_refusals.sh [tries]
#
# OHBLOOM_BENCH_PORT (default 46600) and the next port.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
tries=${1:-5}
bench_work tls-refusals
port=${OHBLOOM_BENCH_PORT:-46600}
tls_port=$((port + 1))
bench_build
(
  cd "$work"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench-ca \
    -keyout ca.key -out ca.crt 2>/dev/null
  for name in server client; do
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
      -keyout "$name.key" -out "$name.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\n' >ext
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile ext \
      -out "$name.crt" 2>/dev/null
  done
)
"$work/ohbloom" serve --addr "127.0.0.1:$port" --tls-port "$tls_port" --requirepass pw \
  --tls-cert-file "$work/server.crt" --tls-key-file "$work/server.key" --tls-ca-cert-file "$work/ca.crt" \
  2>"$work/serve.log" &
serve_pid=$!
wait_ping "$port" -a pw --no-auth-warning
ms() { echo $(($(date +%s%N) / 1000000)); }

# time_it NAME COMMAND...: runs it tries times, prints NAME median max.
time_it() {
  local name=$1
  shift
  local times=()
  for _ in $(seq "$tries"); do
    local t0
    t0=$(ms)
    "$@" >"$work/out" 2>&1 || true
    times+=($(($(ms) - t0)))
  done
  local sorted
  sorted=($(printf '%s\n' "${times[@]}" | sort -n))
  printf '| %s | %s | %s | %s |\n' "$name" "${sorted[$((tries / 2))]}" "${sorted[$((tries - 1))]}" \
    "$(tr -d '\r' <"$work/out" | head -c 120 | tr '\n' ' ')"
}
silent() {
  # Connects and says nothing; returns when the server closes.
  exec 3<>"/dev/tcp/127.0.0.1/$tls_port"
  cat <&3 >/dev/null
  exec 3<&-
}

before=$(cpu_ticks "$serve_pid")
echo "| client | median ms | slowest ms | what it printed |"
echo "|---|---:|---:|---|"
time_it "plaintext redis-cli on the TLS port" redis-cli -p "$tls_port" PING
time_it "redis-cli --tls, no certificate (tls-auth-clients yes)" \
  redis-cli --tls --cacert "$work/ca.crt" -p "$tls_port" PING
time_it "redis-cli --tls on the plaintext port" redis-cli --tls --cacert "$work/ca.crt" -p "$port" PING
time_it "a silent client on the TLS port" silent
time_it "redis-cli --tls with a certificate (served)" redis-cli --tls --cacert "$work/ca.crt" \
  --cert "$work/client.crt" --key "$work/client.key" -p "$tls_port" -a pw --no-auth-warning PING
after=$(cpu_ticks "$serve_pid")
echo
echo "After: $(redis-cli -p "$port" -a pw --no-auth-warning INFO clients | tr -d '\r' | grep connected_clients)" \
  "(this client included); server CPU over all $((5 * tries)) clients: $(((after - before) * 1000 / $(getconf CLK_TCK))) ms"

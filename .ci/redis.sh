# Sourced by .ci/run: installs Redis (Debian's redis-server and redis-tools)
# and redis-py (python3-redis) if the machine lacks them, starts a throwaway standalone server and a
# three-node cluster on loopback ports, exports their addresses for the
# tests (OHBLOOM_REDIS_ADDR, OHBLOOM_REDIS_CLUSTER), and stops them when the
# script exits.
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null || ! command -v redis-benchmark >/dev/null \
   || ! /usr/bin/python3 -c 'import redis' 2>/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools python3-redis >/dev/null
fi
REDISDIR=$(mktemp -d /tmp/ohbloom-redis.XXXXXX)
# Ports: OHBLOOM_CI_REDIS_PORT for the standalone server, and the three
# after OHBLOOM_CI_CLUSTER_PORT for the cluster (.ci/busy moves them, so
# that it can run beside .ci/run). All stay outside Linux's ephemeral range
# (32768-60999), the cluster's bus ports (port + 10000) too: a port in it
# can be held by any client socket on the machine, and a server then fails
# to bind it.
REDIS_PORT=${OHBLOOM_CI_REDIS_PORT:-63790}
CLUSTER_PORT=${OHBLOOM_CI_CLUSTER_PORT:-16390}
CLUSTER_PORTS="$((CLUSTER_PORT + 1)) $((CLUSTER_PORT + 2)) $((CLUSTER_PORT + 3))"
stop_redis() {
  for port in "$REDIS_PORT" $CLUSTER_PORTS; do redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; done
  rm -rf "$REDISDIR"
}
# Stop whatever started if a later start fails (the caller's trap takes
# over once this script has returned).
trap 'stop_redis; type stop_postgres >/dev/null 2>&1 && stop_postgres' EXIT
redis_start() { # port [extra redis-server flags]
  local port=$1; shift
  mkdir -p "$REDISDIR/$port"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$REDISDIR/$port" --logfile "$REDISDIR/$port/log" --daemonize yes "$@"
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "redis-server on port $port did not start:"; cat "$REDISDIR/$port/log"; return 1
}
redis_start "$REDIS_PORT"
for port in $CLUSTER_PORTS; do
  redis_start "$port" --cluster-enabled yes --cluster-config-file "$REDISDIR/$port/nodes.conf"
done
redis-cli --cluster create $(for p in $CLUSTER_PORTS; do printf "127.0.0.1:%s " "$p"; done) --cluster-replicas 0 --cluster-yes >/dev/null
for _ in $(seq 100); do
  redis-cli -p "$((CLUSTER_PORT + 1))" cluster info | grep -q 'cluster_state:ok' && break; sleep 0.1
done
export OHBLOOM_REDIS_ADDR=127.0.0.1:$REDIS_PORT
export OHBLOOM_REDIS_CLUSTER=$(echo $CLUSTER_PORTS | sed -E 's/([0-9]+)/127.0.0.1:\1/g; s/ /,/g')
echo "$(redis-server --version | awk '{print $1, $2, $3}') on 127.0.0.1:$REDIS_PORT, cluster on $((CLUSTER_PORT + 1))-$((CLUSTER_PORT + 3))"

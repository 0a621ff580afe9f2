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
redis_start() { # port [extra redis-server flags]
  local port=$1; shift
  mkdir -p "$REDISDIR/$port"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$REDISDIR/$port" --logfile "$REDISDIR/$port/log" --daemonize yes "$@"
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "redis-server on port $port did not start:"; cat "$REDISDIR/$port/log"; return 1
}
redis_start 63790
for port in 46391 46392 46393; do
  redis_start "$port" --cluster-enabled yes --cluster-config-file "$REDISDIR/$port/nodes.conf"
done
redis-cli --cluster create 127.0.0.1:46391 127.0.0.1:46392 127.0.0.1:46393 --cluster-replicas 0 --cluster-yes >/dev/null
for _ in $(seq 100); do
  redis-cli -p 46391 cluster info | grep -q 'cluster_state:ok' && break; sleep 0.1
done
stop_redis() {
  for port in 63790 46391 46392 46393; do redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; done
  rm -rf "$REDISDIR"
}
export OHBLOOM_REDIS_ADDR=127.0.0.1:63790
export OHBLOOM_REDIS_CLUSTER=127.0.0.1:46391,127.0.0.1:46392,127.0.0.1:46393
echo "$(redis-server --version | awk '{print $1, $2, $3}') on 127.0.0.1:63790, cluster on 46391-46393"

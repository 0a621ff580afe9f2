# Sourced by .ci/run: installs PostgreSQL if the machine lacks it, starts a
# throwaway server on a loopback port, exports OHBLOOM_POSTGRES_URL for the
# tests, and stops the server when the script exits.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
PGPORT=${OHBLOOM_CI_PG_PORT:-25329} # .ci/busy moves it; outside the ephemeral range, as in redis.sh
PGDATA=$(mktemp -d /tmp/ohbloom-pg.XXXXXX)
chown postgres "$PGDATA"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGDATA/data" -A trust -U ohbloom >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA/data" -l "$PGDATA/log" -w \
  -o "-p $PGPORT -c listen_addresses=127.0.0.1 -k $PGDATA" start >/dev/null
stop_postgres() {
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$PGDATA"
}
trap stop_postgres EXIT
export OHBLOOM_POSTGRES_URL="postgres://ohbloom@127.0.0.1:$PGPORT/postgres?sslmode=disable"
echo "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PGPORT"

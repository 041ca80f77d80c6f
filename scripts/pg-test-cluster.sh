#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests, benchmarks and the README's "Scaling out" blocks (DESIGN.md section 5).
#
#   scripts/pg-test-cluster.sh start DIR [PORT]   initdb in DIR (created; must not hold a cluster yet), start the
#                                                 server on 127.0.0.1:PORT (default 54329) with its socket in DIR, and
#                                                 print its URL (postgres://postgres@127.0.0.1:PORT/postgres)
#   scripts/pg-test-cluster.sh stop DIR           stop it (fast shutdown); the caller removes DIR
#
# Only loopback: listen_addresses=127.0.0.1, unix socket in DIR (never /var/run/postgresql), trust authentication on
# loopback only. initdb and postgres refuse to run as root: as root, they run as the `postgres` user (created when
# missing) and DIR is handed to it. The binaries are Debian's (/usr/lib/postgresql/<version>/bin, newest version);
# PG_BIN overrides the directory.
set -euo pipefail

die() { echo "pg-test-cluster: $*" >&2; exit 1; }

pg_bin() {
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && { echo "$dir"; return; }
  dir=$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")
  [ -x "$dir/initdb" ] && { echo "$dir"; return; }
  die "no PostgreSQL server binaries (initdb, pg_ctl) found: install Debian's postgresql package (apt-get install -y postgresql) or set PG_BIN"
}

# Runs a command as the cluster's owner: ourselves, or `postgres` when we are root.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start DIR [PORT] | stop DIR"
bin=$(pg_bin)

case "$cmd" in
  start)
    port=${3:-54329}
    [[ "$port" =~ ^[0-9]+$ ]] || die "port must be a number, got '$port'"
    [ -e "$dir/PG_VERSION" ] && die "$dir already holds a cluster"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" -eq 0 ]; then
      id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
      chown postgres: "$dir"
      # The owner must be able to reach DIR: every directory above it needs search permission for it.
    fi
    chmod 700 "$dir"
    as_owner "$bin/initdb" -D "$dir" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir.initdb.log" 2>&1 ||
      as_owner "$bin/initdb" -D "$dir" -U postgres --auth=trust --encoding=UTF8 --locale=C >"$dir.initdb.log" 2>&1 ||
      die "initdb failed in $dir: $(tail -n 5 "$dir.initdb.log")"
    # Loopback TCP only, and a socket directory of its own.
    cat >"$dir/pg_hba.conf" <<EOF
local all all trust
host all all 127.0.0.1/32 trust
EOF
    as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on -c max_connections=200 -c shared_buffers=64MB" start >/dev/null ||
      die "the server did not start on port $port: $(tail -n 5 "$dir/server.log" 2>/dev/null)"
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    [ -e "$dir/PG_VERSION" ] || die "$dir holds no cluster"
    as_owner "$bin/pg_ctl" -D "$dir" -m fast -w -t 60 stop >/dev/null
    ;;
  *)
    die "unknown command '$cmd': use start or stop"
    ;;
esac

#!/usr/bin/env bash
# Start a throwaway PostgreSQL server (for tests) and print its DSN on stdout.
#
#   scripts/start-postgres.sh [DIR]        start a server whose files live in DIR (default: a new temp dir)
#   scripts/start-postgres.sh --stop DIR   stop that server and delete DIR
#
# It listens on 127.0.0.1 at a random free port and on a unix socket in DIR, with `trust` authentication:
# for tests only. No systemd: initdb + pg_ctl. Started as root, it runs the server as the `postgres` user
# (initdb refuses root). The binaries come from $PG_BIN, else PATH, else the newest
# /usr/lib/postgresql/*/bin (Debian's `postgresql` package: apt-get install postgresql).
# Exit codes: 0 started (or stopped), 3 no PostgreSQL binaries, 1 anything else.
#
#   DSN=$(scripts/start-postgres.sh /tmp/pg) && TRIKE_TEST_PG_DSN=$DSN python -m pytest tests/test_storage_sql.py
#   scripts/start-postgres.sh --stop /tmp/pg
set -euo pipefail

log() { echo "start-postgres: $*" >&2; }

find_bin() {
  if [ -n "${PG_BIN:-}" ]; then
    [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] && { echo "$PG_BIN"; return 0; }
    log "PG_BIN=$PG_BIN has no initdb/pg_ctl"
    return 1
  fi
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return 0
  fi
  local best
  best=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$best" ] && [ -x "$best/initdb" ] && [ -x "$best/pg_ctl" ]; then
    echo "$best"
    return 0
  fi
  return 1
}

as_owner() {  # run a command as the server's owner
  if [ "$(id -u)" = "0" ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

BIN=$(find_bin) || { log "PostgreSQL server binaries (initdb, pg_ctl) not found: apt-get install postgresql, or set PG_BIN"; exit 3; }

if [ "${1:-}" = "--stop" ]; then
  DIR=${2:?usage: start-postgres.sh --stop DIR}
  if [ ! -f "$DIR/.trike-pg" ]; then
    log "$DIR was not made by this script; not touching it"
    exit 1
  fi
  if [ -f "$DIR/data/postmaster.pid" ]; then
    as_owner "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$DIR"
  exit 0
fi

if [ "$(id -u)" = "0" ] && ! id postgres >/dev/null 2>&1; then
  log "running as root but there is no 'postgres' user to run the server (apt-get install postgresql creates it)"
  exit 1
fi

DIR=${1:-}
if [ -z "$DIR" ]; then
  DIR=$(mktemp -d /tmp/trike-pg.XXXXXX)
else
  mkdir -p "$DIR"
  if [ -n "$(ls -A "$DIR")" ]; then
    log "$DIR is not empty"
    exit 1
  fi
fi
DIR=$(cd "$DIR" && pwd)
touch "$DIR/.trike-pg"
if [ "$(id -u)" = "0" ]; then
  chown postgres "$DIR"
fi
chmod 700 "$DIR"

as_owner "$BIN/initdb" -D "$DIR/data" -U postgres --auth=trust -E UTF8 --no-locale --no-sync >"$DIR/initdb.log" 2>&1 \
  || { log "initdb failed:"; cat "$DIR/initdb.log" >&2; exit 1; }

for attempt in 1 2 3 4 5; do
  PORT=$(free_port)
  OPTS="-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c fsync=off -c full_page_writes=off -c max_connections=50"
  if as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -o "$OPTS" -w -t 60 start >/dev/null 2>&1; then
    echo "$PORT" >"$DIR/port"
    log "started PostgreSQL ($BIN) in $DIR on 127.0.0.1:$PORT; stop it with: $0 --stop $DIR"
    echo "postgresql://postgres@127.0.0.1:$PORT/postgres"
    exit 0
  fi
  log "start on port $PORT failed (attempt $attempt)"
done
log "could not start the server; its log:"
tail -n 30 "$DIR/server.log" >&2 || true
exit 1

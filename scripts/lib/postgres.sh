# Sourced by scripts/postgres.sh: `start_postgres` starts a throw-away
# PostgreSQL server (Debian's package, installed when missing) on a free
# loopback port, in a fresh data directory, as an unprivileged user, and
# exports MERIDIAN_POSTGRES (`postgres://meridian:<password>@127.0.0.1:<port>`)
# and PG_DATA_DIR / PG_RUN_AS for `pg_as`; `stop_postgres` stops it and
# removes its directory.
pg_bin() {
  # The server's programs: a client-only install has the directory too.
  local dir found=""
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do
    [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && found="$dir"
  done
  echo "$found"
}

# Runs a server program as the user the server runs as.
pg_as() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$PG_RUN_AS" -- "$@"
  else
    "$@"
  fi
}

start_postgres() {
  if [ -z "$(pg_bin)" ] || ! command -v psql >/dev/null 2>&1; then
    local sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq postgresql postgresql-client
  fi
  local bin port password
  bin="$(pg_bin)"
  # The server refuses to run as root: Debian's package made `postgres`
  # (`nobody` where an image lacks it).
  PG_RUN_AS="$(id -un)"
  if [ "$(id -u)" -eq 0 ]; then
    PG_RUN_AS=postgres
    id postgres >/dev/null 2>&1 || PG_RUN_AS=nobody
  fi
  PG_DIR="$(mktemp -d /tmp/meridian-pg.XXXXXX)"
  PG_DATA_DIR="$PG_DIR/data"
  password="$(head -c 18 /dev/urandom | base64 | tr -d '/+=')"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  printf '%s\n' "$password" >"$PG_DIR/pwfile"
  chown -R "$PG_RUN_AS" "$PG_DIR" 2>/dev/null || true
  chmod 700 "$PG_DIR"
  pg_as "$bin/initdb" -D "$PG_DATA_DIR" -U meridian --pwfile="$PG_DIR/pwfile" \
    --auth=scram-sha-256 --encoding=UTF8 --locale=C >"$PG_DIR/initdb.log" 2>&1 \
    || { cat "$PG_DIR/initdb.log" >&2; return 1; }
  # In the data directory's own file, so that a test which stops the
  # server (tests/tests/postgres.rs) starts it again as it was.
  cat >>"$PG_DATA_DIR/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$PG_DIR'
max_connections = 400
fsync = off
CONF
  pg_as "$bin/pg_ctl" -D "$PG_DATA_DIR" -l "$PG_DIR/server.log" -w start >/dev/null \
    || { cat "$PG_DIR/server.log" >&2; return 1; }
  export PG_BIN="$bin" PG_DIR PG_DATA_DIR PG_RUN_AS
  export MERIDIAN_POSTGRES="postgres://meridian:$password@127.0.0.1:$port"
  echo "PostgreSQL: $("$bin/postgres" --version) on 127.0.0.1:$port ($PG_DATA_DIR, as $PG_RUN_AS)"
}

stop_postgres() {
  [ -n "${PG_DATA_DIR:-}" ] || return 0
  pg_as "$PG_BIN/pg_ctl" -D "$PG_DATA_DIR" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
}

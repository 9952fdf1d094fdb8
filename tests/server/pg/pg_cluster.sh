#!/usr/bin/env bash
# A throwaway PostgreSQL server for the key store tests: initdb in a directory, a Unix socket in
# that same directory (no TCP), trust authentication, superuser "pqcd". No system service is used.
# initdb refuses to run as root, so as root the server runs as the user "nobody".
#
# Usage: pg_cluster.sh init DIR     create DIR/data (DIR must not exist or be empty)
#        pg_cluster.sh start DIR    start (waits until it accepts connections)
#        pg_cluster.sh stop DIR     stop, fast mode (aborts open transactions, like an outage)
#        pg_cluster.sh psql DIR SQL run SQL as pqcd in database postgres, print tuples only
#        pg_cluster.sh psql-file DIR FILE   the same with the SQL of FILE (a pg_dump, say)
#        pg_cluster.sh dump DIR     print a pg_dump of database postgres (plain SQL, no owners)
#        pg_cluster.sh dsn DIR      print the postgresql:// URI that reaches it
# Needs Debian's postgresql (initdb, pg_ctl under pg_config --bindir or /usr/lib/postgresql/*/bin).
set -euo pipefail
cmd=${1:?usage: pg_cluster.sh init|start|stop|psql|psql-file|dump|dsn DIR}
dir=${2:?directory}

bindir=""
if command -v pg_config >/dev/null 2>&1 && [[ -x $(pg_config --bindir)/initdb ]]; then
  bindir=$(pg_config --bindir)
else
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [[ -x $d/initdb ]]; then
      bindir=$d
      break
    fi
  done
fi
if [[ -z $bindir ]]; then
  echo "pg_cluster.sh: initdb not found (install Debian's postgresql: scripts/install-deps.sh)" >&2
  exit 2
fi

as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u nobody -- "$@"
  else
    "$@"
  fi
}

case $cmd in
  init)
    mkdir -p "$dir"
    if [[ $(id -u) -eq 0 ]]; then
      chown nobody "$dir"
      # nobody must be able to reach DIR: let others traverse (not list) its parent, a test's
      # private temporary directory.
      chmod o+x "$(dirname "$dir")"
    fi
    chmod 0700 "$dir"
    as_owner "$bindir/initdb" -D "$dir/data" -U pqcd --auth=trust --no-sync -E UTF8 \
      --locale=C >"$dir/initdb.log" 2>&1 || {
      cat "$dir/initdb.log" >&2
      exit 1
    }
    cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 50
CONF
    ;;
  start)
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null
    ;;
  stop)
    as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
    ;;
  psql)
    "$bindir/psql" -X -q -t -A -v ON_ERROR_STOP=1 -h "$dir" -U pqcd -d postgres -c "${3:?SQL}"
    ;;
  psql-file)
    "$bindir/psql" -X -q -t -A -v ON_ERROR_STOP=1 -h "$dir" -U pqcd -d postgres -f "${3:?FILE}"
    ;;
  dump)
    "$bindir/pg_dump" -h "$dir" -U pqcd -d postgres --no-owner --no-privileges
    ;;
  dsn)
    echo "postgresql:///postgres?host=$dir&user=pqcd"
    ;;
  *)
    echo "pg_cluster.sh: unknown command $cmd" >&2
    exit 2
    ;;
esac

#!/bin/sh
# A throwaway PostgreSQL server for the store tests, listening on a Unix
# socket in <dir> only (no TCP):
#   server.sh start <dir>   initdb, start, wait until ready, create cronoq_test
#   server.sh stop <dir>    stop it and remove <dir>
#   server.sh pause <dir>   stop it (fast shutdown), keeping its data
#   server.sh resume <dir>  start it again after a pause
# PostgreSQL refuses to run as root: as root the server runs as the user
# postgres (runuser), otherwise as the calling user.
set -eu
command="$1"
dir="$2"
bin="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$command" in
start)
    rm -rf "$dir"
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log"; exit 1; }
    "$0" resume "$dir"
    "$bin/createdb" -h "$dir" -U postgres cronoq_test
    echo "PostgreSQL ready in $dir"
    ;;
resume)
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-k $dir -c listen_addresses='' -c max_connections=200 -c fsync=off" start >/dev/null ||
        { cat "$dir/server.log"; exit 1; }
    i=0
    until "$bin/pg_isready" -q -h "$dir"; do
        i=$((i + 1))
        [ "$i" -lt 300 ] || { echo "the server in $dir did not become ready"; cat "$dir/server.log"; exit 1; }
        sleep 0.1
    done
    ;;
pause)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
stop)
    if [ -d "$dir/data" ]; then as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null || true; fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: server.sh start|stop <dir>" >&2
    exit 2
    ;;
esac

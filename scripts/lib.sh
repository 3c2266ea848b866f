#!/usr/bin/env bash
# scripts/lib.sh: the helpers the cluster scripts share (cluster.sh,
# pgbouncer.sh, proxies.sh, patroni.sh). Sourced, never run: each script
# sets LOG_TAG, the word its log lines begin with, then sources this file.

# shellcheck disable=SC2034 # IS_ROOT is the sourcing script's
IS_ROOT=0
[ "$(id -u)" -eq 0 ] && IS_ROOT=1

# The clients' environment must not point the scripts' psql and mariadb
# calls at another server or account.
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGSERVICE PGSERVICEFILE \
    PGOPTIONS PGSSLMODE PGPASSWORD PGPASSFILE PGDATA MYSQL_PWD MYSQL_HOST \
    MYSQL_TCP_PORT MYSQL_UNIX_PORT 2>/dev/null || true

log() { printf '[%s %(%H:%M:%S)T] %s\n' "${LOG_TAG:-rwpool}" -1 "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}

# wait_until SECONDS CMD...: poll CMD every 0.2 s; false on timeout.
wait_until() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

# port_open PORT: something accepts connections on 127.0.0.1:PORT.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pid_alive PID: true if PID exists and isn't a zombie. Processes we kill
# are reaped by whoever inherited them, which may take a moment; a zombie
# holds no port or file, so it counts as gone. (The /proc helpers are pure
# bash: forks are what makes these scripts slow, and down/status call them
# a lot.)
pid_alive() {
    local st
    st=$(pid_state "$1")
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
pid_gone() { ! pid_alive "$1"; }

# pid_state PID: the one-letter state from /proc/PID/status (empty if gone).
pid_state() {
    local k v _
    [ -n "$1" ] && [ -r "/proc/$1/status" ] || return 0
    while read -r k v _; do
        if [ "$k" = State: ]; then
            echo "$v"
            return 0
        fi
    done <"/proc/$1/status" 2>/dev/null || true
}

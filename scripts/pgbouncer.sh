#!/usr/bin/env bash
# scripts/pgbouncer.sh: start and stop a PgBouncer in front of each
# PostgreSQL node of a running scripts/cluster.sh cluster, on 127.0.0.1, the
# way production clusters often run one: one PgBouncer per server, in
# transaction mode, and (a second set) in session mode. rwpool's tests
# through poolers (integration_pgbouncer_test.go) use them.
#
# Usage: scripts/pgbouncer.sh up|down|status|env
#
#   up       stop any PgBouncers of the state dir, start six afresh and wait
#            until each answers; writes $RWPOOL_PGBOUNCER_DIR/env
#   down     stop them and delete the state dir (safe when nothing is up)
#   status   one line per PgBouncer; exit status 1 if one does not answer
#   env      print the env file
#   repoint PORT SERVERPORT
#            point the PgBouncer listening on PORT at the server on
#            SERVERPORT (its [databases] entry) and RELOAD it, as an HA
#            tool's callback does after a failover: client connections stay
#            open, and their next transactions run on SERVERPORT; server
#            connections to the old server are closed as they come free
#
# Environment:
#   RWPOOL_CLUSTER_DIR    the cluster's state dir (default /tmp/rwpool-cluster);
#                         its env file gives the nodes' ports
#   RWPOOL_PGBOUNCER_DIR  state dir (default $RWPOOL_CLUSTER_DIR-pgbouncer: not
#                         inside the cluster's dir, which `cluster.sh down`
#                         deletes)
#   RWPOOL_READY_TIMEOUT  bound in seconds for each wait (default 60)
#
# Ports, from the PostgreSQL primary's port PG (the servers are PG, PG+1,
# PG+2), so that clusters on other port bases get PgBouncers of their own:
#   PG+20, PG+21, PG+22  transaction mode, in front of PG, PG+1, PG+2
#   PG+23, PG+24, PG+25  session mode, in front of PG, PG+1, PG+2
#
# Env file ($RWPOOL_PGBOUNCER_DIR/env, `export K=V` lines), primary first:
#   RWPOOL_PGBOUNCER_TX=127.0.0.1:PORT,127.0.0.1:PORT,127.0.0.1:PORT
#   RWPOOL_PGBOUNCER_SESSION=...
#   RWPOOL_PGBOUNCER_DIR, RWPOOL_PGBOUNCER_SCRIPT
#
# Settings that differ from PgBouncer's defaults, and why:
#   server_login_retry = 1   the default (15 s) keeps a restarted server
#                            out of reach for up to 15 s after PgBouncer
#                            failed to log in to it once (README, "Behind
#                            PgBouncer")
#   query_wait_timeout = 1   a statement that waits for a server connection
#                            fails after 1 s instead of 120 s: when a
#                            server dies, the statements PgBouncer had
#                            queued for it wait, without an error, until
#                            this timeout (measured: 4 writes stuck for
#                            the whole 8 s of their deadline with the
#                            default), though rwpool had tripped the node
#                            within 1 s
#   server_check_delay = 0   a pooled server connection is checked before
#                            reuse, so that a restarted server's dead
#                            connections are not handed out
#   ignore_startup_parameters = extra_float_digits   pgx sends it
# Authentication is trust on both sides (the cluster's PostgreSQL trusts
# 127.0.0.1); the users must still be listed in auth_file.
#
# Debian's pgbouncer package is installed with apt-get when missing and this
# runs as root (its system service is not used). PgBouncer refuses to run as
# root: it runs as the postgres account, as the servers do.

set -euo pipefail

SCRIPT_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"

CLUSTER_DIR="${RWPOOL_CLUSTER_DIR:-/tmp/rwpool-cluster}"
case "$CLUSTER_DIR" in /*) ;; *) CLUSTER_DIR="$PWD/$CLUSTER_DIR" ;; esac
CLUSTER_DIR="${CLUSTER_DIR%/}"
STATE="${RWPOOL_PGBOUNCER_DIR:-$CLUSTER_DIR-pgbouncer}"
case "$STATE" in /*) ;; *) STATE="$PWD/$STATE" ;; esac
STATE="${STATE%/}"
TIMEOUT="${RWPOOL_READY_TIMEOUT:-60}"
MARKER=".rwpool-pgbouncer"

LOG_TAG=pgbouncer
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"


PGBOUNCER=""
find_binary() {
    PGBOUNCER=$(command -v pgbouncer || true)
    [ -n "$PGBOUNCER" ] || { [ -x /usr/sbin/pgbouncer ] && PGBOUNCER=/usr/sbin/pgbouncer; } || true
}
ensure_package() {
    find_binary
    [ -n "$PGBOUNCER" ] && return 0
    if [ "$IS_ROOT" -ne 1 ] || ! command -v apt-get >/dev/null 2>&1; then
        die "pgbouncer missing: install the Debian package pgbouncer (or run this as root to have it done)"
    fi
    log "installing pgbouncer via apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q pgbouncer
    find_binary
    [ -n "$PGBOUNCER" ] || die "pgbouncer still missing after apt-get install"
}

load_cluster() {
    local f="$CLUSTER_DIR/env"
    [ -r "$f" ] || die "no cluster env file $f: run scripts/cluster.sh up first (same RWPOOL_CLUSTER_DIR)"
    # shellcheck disable=SC1090
    . "$f"
    IFS=, read -r PG0 PG1 PG2 <<<"$RWPOOL_PG_PORTS"
    SERVERS=("$PG0" "$PG1" "$PG2")
    TX_PORTS=($((PG0 + 20)) $((PG0 + 21)) $((PG0 + 22)))
    SESSION_PORTS=($((PG0 + 23)) $((PG0 + 24)) $((PG0 + 25)))
}

as_postgres() {
    if [ "$IS_ROOT" -eq 1 ]; then
        (cd / && runuser -u postgres -- "$@")
    else
        (cd / && "$@")
    fi
}

# write_config NAME PORT SERVERPORT MODE
write_config() {
    local name="$1" port="$2" server="$3" mode="$4"
    cat >"$STATE/$name.ini" <<EOF
[databases]
* = host=127.0.0.1 port=$server

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
pidfile = $STATE/$name.pid
logfile = $STATE/$name.log
auth_type = trust
auth_file = $STATE/users.txt
admin_users = postgres
pool_mode = $mode
max_client_conn = 2000
default_pool_size = 40
reserve_pool_size = 5
server_login_retry = 1
query_wait_timeout = 1
server_check_delay = 0
server_connect_timeout = 3
ignore_startup_parameters = extra_float_digits
log_connections = 0
log_disconnections = 0
EOF
}

stop_one() {
    local f="$STATE/$1.pid" pid
    [ -r "$f" ] || return 0
    pid=$(head -1 "$f" 2>/dev/null | tr -dc 0-9)
    if pid_alive "$pid"; then
        kill -INT "$pid" 2>/dev/null || true
        if ! wait_until 15 pid_gone "$pid"; then
            log "$1 (pid $pid) did not stop; SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$f"
}

cmd_down() {
    [ -d "$STATE" ] || return 0
    [ -e "$STATE/$MARKER" ] || die "$STATE is not a PgBouncer state dir (no $MARKER); not touching it"
    local f p
    for f in "$STATE"/*.ini; do
        [ -e "$f" ] || continue
        stop_one "$(basename "$f" .ini)"
    done
    for p in $(pgrep -f -- "$STATE/" || true); do
        kill -KILL "$p" 2>/dev/null || true
    done
    rm -rf "$STATE"
    log "PgBouncers down ($STATE)"
}

pg_ready_via() {
    "$RWPOOL_PG_BIN/psql" -X -q -A -t -h 127.0.0.1 -p "$1" -U "$RWPOOL_DB_USER" -d "$RWPOOL_DB_NAME" \
        -v ON_ERROR_STOP=1 -c 'SELECT 1' >/dev/null 2>&1
}

addrs() {
    local out="" p
    for p in "$@"; do out="$out,127.0.0.1:$p"; done
    echo "${out#,}"
}

write_env() {
    {
        echo "# rwpool test PgBouncers, written by scripts/pgbouncer.sh up on $(date -Is)"
        echo "export RWPOOL_PGBOUNCER_DIR='$STATE'"
        echo "export RWPOOL_PGBOUNCER_SCRIPT='$SCRIPT_PATH'"
        echo "export RWPOOL_PGBOUNCER_TX=$(addrs "${TX_PORTS[@]}")"
        echo "export RWPOOL_PGBOUNCER_SESSION=$(addrs "${SESSION_PORTS[@]}")"
    } >"$STATE/env.tmp"
    chmod 0644 "$STATE/env.tmp"
    mv "$STATE/env.tmp" "$STATE/env"
}

cmd_up() {
    ensure_package
    load_cluster
    cmd_down
    local i p
    "$(dirname "$SCRIPT_PATH")/cluster.sh" reserve-ports "${TX_PORTS[@]}" "${SESSION_PORTS[@]}"
    for p in "${TX_PORTS[@]}" "${SESSION_PORTS[@]}"; do
        ! port_open "$p" || die "port $p is taken: another cluster's PgBouncers on a nearby port base?"
    done
    mkdir -p "$STATE"
    touch "$STATE/$MARKER"
    printf '"%s" ""\n"postgres" ""\n' "$RWPOOL_DB_USER" >"$STATE/users.txt"
    for i in 0 1 2; do
        write_config "tx-${SERVERS[$i]}" "${TX_PORTS[$i]}" "${SERVERS[$i]}" transaction
        write_config "session-${SERVERS[$i]}" "${SESSION_PORTS[$i]}" "${SERVERS[$i]}" session
    done
    if [ "$IS_ROOT" -eq 1 ]; then chown -R postgres:postgres "$STATE"; fi
    chmod 0755 "$STATE"
    for i in 0 1 2; do
        as_postgres "$PGBOUNCER" -q -d "$STATE/tx-${SERVERS[$i]}.ini" || die "pgbouncer tx-${SERVERS[$i]} did not start"
        as_postgres "$PGBOUNCER" -q -d "$STATE/session-${SERVERS[$i]}.ini" || die "pgbouncer session-${SERVERS[$i]} did not start"
    done
    for p in "${TX_PORTS[@]}" "${SESSION_PORTS[@]}"; do
        wait_until "$TIMEOUT" pg_ready_via "$p" || die "PgBouncer on $p does not answer"
    done
    write_env
    log "PgBouncers up: transaction mode ${TX_PORTS[*]}, session mode ${SESSION_PORTS[*]}; env: $STATE/env"
}

cmd_status() {
    [ -r "$STATE/env" ] || die "no PgBouncers in $STATE (no env file)"
    load_cluster
    local bad=0 i
    for i in 0 1 2; do
        for p in "tx ${TX_PORTS[$i]}" "session ${SESSION_PORTS[$i]}"; do
            set -- $p
            if pg_ready_via "$2"; then
                printf '%-8s %-6s -> %-6s up\n' "$1" "$2" "${SERVERS[$i]}"
            else
                printf '%-8s %-6s -> %-6s DOWN\n' "$1" "$2" "${SERVERS[$i]}"
                bad=1
            fi
        done
    done
    return "$bad"
}

cmd_repoint() {
    local port="$1" server="$2" f
    [ -r "$STATE/env" ] || die "no PgBouncers in $STATE (no env file)"
    load_cluster
    f=$(grep -l "^listen_port = $port\$" "$STATE"/*.ini 2>/dev/null | head -1)
    [ -n "$f" ] || die "no PgBouncer of $STATE listens on $port"
    sed -i "s|^\* = host=127.0.0.1 port=[0-9]*\$|* = host=127.0.0.1 port=$server|" "$f"
    "$RWPOOL_PG_BIN/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d pgbouncer -c RELOAD >/dev/null ||
        die "PgBouncer on $port: RELOAD failed"
    log "PgBouncer on $port now points at $server"
}

main() {
    case "${1:-}" in
    repoint)
        [ "$#" -eq 3 ] || die "usage: repoint PORT SERVERPORT"
        cmd_repoint "$2" "$3"
        ;;
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    env) cat "$STATE/env" ;;
    *)
        sed -n '2,/^$/p' "$SCRIPT_PATH" | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
    esac
}

main "$@"; exit "$?"

#!/usr/bin/env bash
# scripts/proxies.sh: start and stop the proxies that `rwpool bench` compares
# rwpool with, on 127.0.0.1, in front of a running scripts/cluster.sh cluster:
#
#   Pgpool-II   (PostgreSQL) streaming-replication mode, load balancing on;
#               config: bench/proxies/pgpool.conf
#   HAProxy     (both) a write endpoint on each primary and a read endpoint
#               balancing each engine's replicas; config:
#               bench/proxies/haproxy.cfg
#
# The configs are templates in the repository; this script fills in the
# ports and state dir and writes the results into the state dir.
#
# Usage: scripts/proxies.sh up|down|status|env
#
#   up       stop any proxies of the state dir, then start both afresh
#            (Pgpool-II forgets which nodes it had detached: -D) and wait
#            until each endpoint answers; writes $RWPOOL_PROXY_DIR/env
#   down     stop them and delete the state dir (safe when nothing is up)
#   status   one line per endpoint; exit status 1 if one does not answer
#   env      print the env file
#
# Environment:
#   RWPOOL_CLUSTER_DIR   the cluster's state dir (default /tmp/rwpool-cluster);
#                        its env file gives the nodes' ports
#   RWPOOL_PROXY_DIR     state dir (default $RWPOOL_CLUSTER_DIR-proxies: not
#                        inside the cluster's dir, which `cluster.sh down`
#                        deletes)
#   RWPOOL_READY_TIMEOUT bound in seconds for each wait (default 60)
#
# Ports, derived from the cluster's primaries, so that clusters on other
# port bases get proxies of their own (PG, MY: the primaries' ports):
#   PG+10 Pgpool-II      PG+11 Pgpool-II's PCP port
#   PG+12 HAProxy PostgreSQL writes   PG+13 HAProxy PostgreSQL reads
#   MY+10 HAProxy MariaDB writes      MY+11 HAProxy MariaDB reads
#
# Env file ($RWPOOL_PROXY_DIR/env, `export K=V` lines):
#   RWPOOL_PGPOOL=127.0.0.1:PORT
#   RWPOOL_HAPROXY_PG_WRITE, RWPOOL_HAPROXY_PG_READ,
#   RWPOOL_HAPROXY_MY_WRITE, RWPOOL_HAPROXY_MY_READ   (host:port)
#   RWPOOL_HAPROXY_SOCKET  HAProxy's admin socket (runtime API)
#   RWPOOL_PROXY_DIR, RWPOOL_PROXY_SCRIPT
#
# HAProxy's MariaDB check (option mysql-check) logs in as a user without a
# password: `up` creates it on every MariaDB node (haproxy_check@127.0.0.1,
# no privileges, not written to the binlog).
#
# The Debian packages pgpool2 and haproxy are installed with apt-get when
# missing and this runs as root (their system services are not used).

set -euo pipefail

SCRIPT_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TEMPLATES="$ROOT/bench/proxies"

CLUSTER_DIR="${RWPOOL_CLUSTER_DIR:-/tmp/rwpool-cluster}"
case "$CLUSTER_DIR" in /*) ;; *) CLUSTER_DIR="$PWD/$CLUSTER_DIR" ;; esac
CLUSTER_DIR="${CLUSTER_DIR%/}"
STATE="${RWPOOL_PROXY_DIR:-$CLUSTER_DIR-proxies}"
case "$STATE" in /*) ;; *) STATE="$PWD/$STATE" ;; esac
STATE="${STATE%/}"
TIMEOUT="${RWPOOL_READY_TIMEOUT:-60}"
MARKER=".rwpool-proxies"
MY_CHECK_USER=haproxy_check

LOG_TAG=proxies
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

show_log() {
    if [ -r "$1" ]; then
        printf -- '----- last 30 lines of %s -----\n' "$1" >&2
        tail -n 30 "$1" >&2 || true
    fi
}


# ensure_packages installs pgpool2 and haproxy when missing, as cluster.sh
# does for the database servers.
PGPOOL="" HAPROXY=""
find_binaries() {
    PGPOOL=$(command -v pgpool || true)
    [ -n "$PGPOOL" ] || { [ -x /usr/sbin/pgpool ] && PGPOOL=/usr/sbin/pgpool; } || true
    HAPROXY=$(command -v haproxy || true)
    [ -n "$HAPROXY" ] || { [ -x /usr/sbin/haproxy ] && HAPROXY=/usr/sbin/haproxy; } || true
}
ensure_packages() {
    find_binaries
    [ -n "$PGPOOL" ] && [ -n "$HAPROXY" ] && return 0
    if [ "$IS_ROOT" -ne 1 ] || ! command -v apt-get >/dev/null 2>&1; then
        die "pgpool or haproxy missing: install the Debian packages pgpool2 and haproxy (or run this as root to have it done)"
    fi
    log "installing pgpool2 and haproxy via apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # Their system services are not started here (no init system), and we
    # would not use them: every proxy runs from the state dir.
    apt-get install -y -q pgpool2 haproxy
    find_binaries
    [ -n "$PGPOOL" ] && [ -n "$HAPROXY" ] || die "pgpool or haproxy still missing after apt-get install"
}

# load_cluster reads the cluster's env file.
load_cluster() {
    local f="$CLUSTER_DIR/env"
    [ -r "$f" ] || die "no cluster env file $f: run scripts/cluster.sh up first (same RWPOOL_CLUSTER_DIR)"
    # shellcheck disable=SC1090
    . "$f"
    IFS=, read -r PG0 PG1 PG2 <<<"$RWPOOL_PG_PORTS"
    IFS=, read -r MY0 MY1 MY2 <<<"$RWPOOL_MY_PORTS"
    PGPOOL_PORT=$((PG0 + 10)) PCP_PORT=$((PG0 + 11))
    HA_PG_WRITE=$((PG0 + 12)) HA_PG_READ=$((PG0 + 13))
    HA_MY_WRITE=$((MY0 + 10)) HA_MY_READ=$((MY0 + 11))
}

# render TEMPLATE OUT: fill in the placeholders.
render() {
    sed -e "s|@DIR@|$STATE|g" \
        -e "s|@PGPOOL_PORT@|$PGPOOL_PORT|g" -e "s|@PCP_PORT@|$PCP_PORT|g" \
        -e "s|@HA_PG_WRITE_PORT@|$HA_PG_WRITE|g" -e "s|@HA_PG_READ_PORT@|$HA_PG_READ|g" \
        -e "s|@HA_MY_WRITE_PORT@|$HA_MY_WRITE|g" -e "s|@HA_MY_READ_PORT@|$HA_MY_READ|g" \
        -e "s|@PG_PRIMARY_PORT@|$PG0|g" -e "s|@PG_REPLICA1_PORT@|$PG1|g" -e "s|@PG_REPLICA2_PORT@|$PG2|g" \
        -e "s|@MY_PRIMARY_PORT@|$MY0|g" -e "s|@MY_REPLICA1_PORT@|$MY1|g" -e "s|@MY_REPLICA2_PORT@|$MY2|g" \
        -e "s|@MY_CHECK_USER@|$MY_CHECK_USER|g" "$1" >"$2"
    if grep -q "@[A-Z0-9_]*@" "$2"; then die "$2: placeholder left: $(grep -o "@[A-Z0-9_]*@" "$2" | head -1)"; fi
}


# stop_pid FILE NAME: SIGINT (fast shutdown for both), then SIGKILL.
stop_pid() {
    local f="$1" name="$2" pid
    [ -r "$f" ] || return 0
    pid=$(head -1 "$f" 2>/dev/null | tr -dc 0-9)
    if pid_alive "$pid"; then
        kill -INT "$pid" 2>/dev/null || true
        if ! wait_until 15 pid_gone "$pid"; then
            log "$name (pid $pid) did not stop; SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$f"
}

cmd_down() {
    [ -d "$STATE" ] || return 0
    [ -e "$STATE/$MARKER" ] || die "$STATE is not a proxies state dir (no $MARKER); not touching it"
    stop_pid "$STATE/haproxy.pid" haproxy
    # pgpool's children: the parent takes them down on SIGINT.
    stop_pid "$STATE/pgpool.pid" pgpool
    # Anything left with our config (a pgpool whose pid file went missing).
    local p
    for p in $(pgrep -f -- "$STATE/pgpool.conf" || true) $(pgrep -f -- "$STATE/haproxy.cfg" || true); do
        kill -KILL "$p" 2>/dev/null || true
    done
    rm -rf "$STATE"
    log "proxies down ($STATE)"
}

# as_postgres CMD...: pgpool as the postgres account when we are root, as
# cluster.sh runs the servers.
as_postgres() {
    if [ "$IS_ROOT" -eq 1 ]; then
        (cd / && runuser -u postgres -- "$@")
    else
        (cd / && "$@")
    fi
}

my_check_user() {
    local p client
    client=$(command -v mariadb || command -v mysql || true)
    [ -n "$client" ] || die "mariadb client missing"
    for p in "$MY0" "$MY1" "$MY2"; do
        "$client" --no-defaults --protocol=TCP -h 127.0.0.1 -P "$p" -u root --connect-timeout=3 -N -B -e \
            "SET SESSION sql_log_bin=0; CREATE USER IF NOT EXISTS '$MY_CHECK_USER'@'127.0.0.1';" ||
            die "MariaDB $p: cannot create $MY_CHECK_USER (is the cluster up?)"
    done
}

pg_ready_via() { psql_q "$1" 'SELECT 1' >/dev/null 2>&1; }
psql_q() {
    "$RWPOOL_PG_BIN/psql" -X -q -A -t -h 127.0.0.1 -p "$1" -U postgres -d postgres \
        -v ON_ERROR_STOP=1 -c "$2"
}
my_ready_via() {
    "$(command -v mariadb || command -v mysql)" --no-defaults --protocol=TCP -h 127.0.0.1 -P "$1" \
        -u "$RWPOOL_DB_USER" -p"$RWPOOL_DB_PASSWORD" --connect-timeout=2 -N -B -e 'SELECT 1' "$RWPOOL_DB_NAME" >/dev/null 2>&1
}

write_env() {
    {
        echo "# rwpool bench proxies, written by scripts/proxies.sh up on $(date -Is)"
        echo "export RWPOOL_PROXY_DIR='$STATE'"
        echo "export RWPOOL_PROXY_SCRIPT='$SCRIPT_PATH'"
        echo "export RWPOOL_PGPOOL=127.0.0.1:$PGPOOL_PORT"
        echo "export RWPOOL_HAPROXY_PG_WRITE=127.0.0.1:$HA_PG_WRITE"
        echo "export RWPOOL_HAPROXY_PG_READ=127.0.0.1:$HA_PG_READ"
        echo "export RWPOOL_HAPROXY_MY_WRITE=127.0.0.1:$HA_MY_WRITE"
        echo "export RWPOOL_HAPROXY_MY_READ=127.0.0.1:$HA_MY_READ"
        echo "export RWPOOL_HAPROXY_SOCKET='$STATE/haproxy.sock'"
    } >"$STATE/env.tmp"
    chmod 0644 "$STATE/env.tmp"
    mv "$STATE/env.tmp" "$STATE/env"
}

cmd_up() {
    ensure_packages
    load_cluster
    cmd_down
    local p
    "$ROOT/scripts/cluster.sh" reserve-ports "$PGPOOL_PORT" "$PCP_PORT" "$HA_PG_WRITE" "$HA_PG_READ" "$HA_MY_WRITE" "$HA_MY_READ"
    for p in "$PGPOOL_PORT" "$PCP_PORT" "$HA_PG_WRITE" "$HA_PG_READ" "$HA_MY_WRITE" "$HA_MY_READ"; do
        ! port_open "$p" || die "port $p is taken: another cluster's proxies on a nearby port base?"
    done
    mkdir -p "$STATE"
    touch "$STATE/$MARKER"
    render "$TEMPLATES/pgpool.conf" "$STATE/pgpool.conf"
    render "$TEMPLATES/haproxy.cfg" "$STATE/haproxy.cfg"
    # pcp.conf must exist; nobody logs in to PCP here.
    echo "rwpool:$(printf 'unused-%s' "$RANDOM$RANDOM" | md5sum | cut -d' ' -f1)" >"$STATE/pcp.conf"
    : >"$STATE/pool_hba.conf"
    if [ "$IS_ROOT" -eq 1 ]; then chown -R postgres:postgres "$STATE"; fi
    chmod 0755 "$STATE"

    my_check_user
    log "HAProxy: PostgreSQL writes $HA_PG_WRITE, reads $HA_PG_READ; MariaDB writes $HA_MY_WRITE, reads $HA_MY_READ"
    "$HAPROXY" -c -q -f "$STATE/haproxy.cfg" || die "haproxy: bad config $STATE/haproxy.cfg"
    "$HAPROXY" -D -f "$STATE/haproxy.cfg" </dev/null >"$STATE/haproxy.log" 2>&1 || {
        show_log "$STATE/haproxy.log"
        die "haproxy did not start"
    }

    log "Pgpool-II: port $PGPOOL_PORT (PCP $PCP_PORT)"
    # -n: in the foreground of a detached session, logging to a file; -D:
    # forget the node states of an earlier run.
    as_postgres setsid "$PGPOOL" -n -D -f "$STATE/pgpool.conf" -F "$STATE/pcp.conf" -a "$STATE/pool_hba.conf" \
        </dev/null >>"$STATE/pgpool.log" 2>&1 &
    disown || true

    wait_until "$TIMEOUT" pg_ready_via "$PGPOOL_PORT" || {
        show_log "$STATE/pgpool.log"
        die "Pgpool-II does not answer on $PGPOOL_PORT"
    }
    for p in "$HA_PG_WRITE" "$HA_PG_READ"; do
        wait_until "$TIMEOUT" pg_ready_via "$p" || die "HAProxy does not answer on $p"
    done
    for p in "$HA_MY_WRITE" "$HA_MY_READ"; do
        wait_until "$TIMEOUT" my_ready_via "$p" || die "HAProxy does not answer on $p"
    done
    write_env
    log "proxies up; env: $STATE/env"
}

cmd_status() {
    [ -r "$STATE/env" ] || die "no proxies in $STATE (no env file)"
    load_cluster
    local bad=0 p
    for p in "pgpool $PGPOOL_PORT pg" "haproxy-pg-write $HA_PG_WRITE pg" "haproxy-pg-read $HA_PG_READ pg" \
        "haproxy-my-write $HA_MY_WRITE my" "haproxy-my-read $HA_MY_READ my"; do
        set -- $p
        if { [ "$3" = pg ] && pg_ready_via "$2"; } || { [ "$3" = my ] && my_ready_via "$2"; }; then
            printf '%-17s %-6s up\n' "$1" "$2"
        else
            printf '%-17s %-6s DOWN\n' "$1" "$2"
            bad=1
        fi
    done
    return "$bad"
}

main() {
    local cmd="${1:-}"
    case "$cmd" in
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

#!/usr/bin/env bash
# scripts/patroni.sh: start and stop a Patroni-managed PostgreSQL cluster on
# 127.0.0.1, the HA setup production PostgreSQL most often runs under: three
# nodes, each a Patroni agent that runs its PostgreSQL, one etcd as the
# distributed configuration store. Patroni decides who leads: it promotes a
# standby when the leader's key expires, and rewinds a crashed leader back
# in as a standby. rwpool's Patroni tests (integration_patroni_test.go) use
# it; it shares nothing with scripts/cluster.sh's cluster.
#
# Usage: scripts/patroni.sh COMMAND [ARGS]
#
#   up              stop and wipe any old cluster of the state dir, start
#                   etcd and three Patroni nodes, wait until one leads and
#                   both others stream from it, create the application
#                   account, then write $RWPOOL_PATRONI_DIR/env
#   down            stop everything started from the state dir and delete it
#                   (safe when nothing is up)
#   status          one line per member (Patroni's view); exit status 1 if
#                   no member leads or one is not running
#   env             print the env file
#   leader          print the PostgreSQL port of the member that leads
#   kill-node PORT  SIGKILL the node's Patroni agent and every process of
#                   its PostgreSQL: a crashed machine. The leader key stays
#                   until its ttl expires; then Patroni promotes a standby
#   start-node PORT start the node's Patroni agent again (a no-op when it
#                   runs). A crashed leader comes back as a standby of the
#                   new leader (pg_rewind). Returns once its agent answers
#   switchover [PORT]
#                   a planned switchover through Patroni's REST API, to the
#                   member on PORT (default: a running standby); returns
#                   once the new leader is writable
#   wait-members    wait until every member runs, one leads, and every
#                   other streams from it with no replay lag
#   tag-node PORT on|off
#                   set or clear the member's noloadbalance tag and reload
#                   Patroni's configuration; returns once its REST API
#                   reports it
#
# Environment:
#   RWPOOL_PATRONI_DIR        state dir (default /tmp/rwpool-patroni)
#   RWPOOL_PATRONI_PORT_BASE  first node's PostgreSQL port (default 55470):
#                             PostgreSQL B, B+1, B+2; Patroni REST B+5..B+7;
#                             etcd peer B+8, client B+9; HAProxy write B+10,
#                             read B+11
#   RWPOOL_PG_BIN             PostgreSQL server bin dir (default: the newest
#                             /usr/lib/postgresql/*/bin)
#   RWPOOL_READY_TIMEOUT      bound in seconds for each wait (default 60)
#
# Env file ($RWPOOL_PATRONI_DIR/env, `export K=V` lines), members in order:
#   RWPOOL_PATRONI_PG=127.0.0.1:B,127.0.0.1:B+1,127.0.0.1:B+2
#   RWPOOL_PATRONI_REST=127.0.0.1:B+5,...
#   RWPOOL_PATRONI_USER, RWPOOL_PATRONI_PASSWORD, RWPOOL_PATRONI_DB
#   RWPOOL_PATRONI_DIR, RWPOOL_PATRONI_SCRIPT, RWPOOL_PATRONI_ETCD
#   RWPOOL_PATRONI_HAPROXY_WRITE, RWPOOL_PATRONI_HAPROXY_READ   (host:port;
#     only when haproxy is installed: `up` then starts one from
#     bench/proxies/haproxy-patroni.cfg, checking Patroni's REST API, for
#     `rwpool bench`'s comparison; the tests do not use it)
#
# Settings, and why:
#   ttl 10, loop_wait 1, retry_timeout 3: a crashed leader is replaced about
#     10 s after the crash (Patroni's defaults, 30 s and 10 s, would make
#     each crash test last a minute); loop_wait + 2 * retry_timeout < ttl,
#     as Patroni requires
#   use_pg_rewind, data checksums: the crashed leader rejoins by rewinding
#     onto the new timeline, as in production, instead of a new base backup
#   fsync off: no test crashes the machine, only processes; the page cache
#     keeps what a killed server wrote
# Authentication is trust on 127.0.0.1 (loopback-only test infrastructure).
#
# Debian's patroni and etcd-server packages are installed with apt-get when
# missing and this runs as root (their system services are not used).
# PostgreSQL refuses to run as root: the agents run as the postgres account.

set -euo pipefail

SCRIPT_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"

STATE="${RWPOOL_PATRONI_DIR:-/tmp/rwpool-patroni}"
case "$STATE" in /*) ;; *) STATE="$PWD/$STATE" ;; esac
STATE="${STATE%/}"
TIMEOUT="${RWPOOL_READY_TIMEOUT:-60}"
MARKER=".rwpool-patroni"
SCOPE=rwpool
APP_USER=app APP_PASSWORD=app-secret-pw APP_DB=rwpool
PY=/usr/bin/python3 # Debian's, which has Patroni's modules (not a pyenv's)

LOG_TAG=patroni
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"


ensure_packages() {
    local missing=()
    command -v patroni >/dev/null 2>&1 || missing+=(patroni)
    command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
    command -v curl >/dev/null 2>&1 || missing+=(curl)
    [ "${#missing[@]}" -eq 0 ] && return 0
    if [ "$IS_ROOT" -ne 1 ] || ! command -v apt-get >/dev/null 2>&1; then
        die "missing: ${missing[*]}: install the Debian packages (or run this as root to have it done)"
    fi
    log "installing ${missing[*]} via apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q "${missing[@]}"
    command -v patroni >/dev/null 2>&1 && command -v etcd >/dev/null 2>&1 ||
        die "patroni or etcd still missing after apt-get install"
}

pg_bin() {
    if [ -n "${RWPOOL_PG_BIN:-}" ]; then
        echo "$RWPOOL_PG_BIN"
        return
    fi
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    [ -n "$d" ] || die "no PostgreSQL server binaries under /usr/lib/postgresql (set RWPOOL_PG_BIN)"
    echo "$d"
}

ports() {
    BASE="${RWPOOL_PATRONI_PORT_BASE:-55470}"
    if [ -r "$STATE/base" ]; then BASE=$(cat "$STATE/base"); fi
    PG_PORTS=("$BASE" $((BASE + 1)) $((BASE + 2)))
    REST_PORTS=($((BASE + 5)) $((BASE + 6)) $((BASE + 7)))
    ETCD_PEER=$((BASE + 8)) ETCD_CLIENT=$((BASE + 9))
    HA_WRITE=$((BASE + 10)) HA_READ=$((BASE + 11))
}

haproxy_bin() { command -v haproxy 2>/dev/null || { [ -x /usr/sbin/haproxy ] && echo /usr/sbin/haproxy; } || true; }

# start_haproxy starts HAProxy with Patroni's REST checks when it is
# installed (Debian's haproxy; scripts/test.sh installs it for the bench).
start_haproxy() {
    local bin tmpl
    bin=$(haproxy_bin)
    tmpl="$(dirname "$SCRIPT_PATH")/../bench/proxies/haproxy-patroni.cfg"
    if [ -z "$bin" ] || [ ! -r "$tmpl" ]; then
        log "no haproxy (or no $tmpl): no HAProxy in front of the cluster"
        return 0
    fi
    sed -e "s|@DIR@|$STATE|g" -e "s|@WRITE_PORT@|$HA_WRITE|g" -e "s|@READ_PORT@|$HA_READ|g" \
        -e "s|@PG0@|${PG_PORTS[0]}|g" -e "s|@PG1@|${PG_PORTS[1]}|g" -e "s|@PG2@|${PG_PORTS[2]}|g" \
        -e "s|@REST0@|${REST_PORTS[0]}|g" -e "s|@REST1@|${REST_PORTS[1]}|g" -e "s|@REST2@|${REST_PORTS[2]}|g" \
        "$tmpl" >"$STATE/haproxy.cfg"
    "$bin" -c -q -f "$STATE/haproxy.cfg" || die "haproxy: bad config $STATE/haproxy.cfg"
    setsid "$bin" -D -f "$STATE/haproxy.cfg" >"$STATE/haproxy.log" 2>&1 </dev/null || die "haproxy did not start"
    wait_until "$TIMEOUT" port_open "$HA_WRITE" || die "HAProxy does not listen on $HA_WRITE"
    HAPROXY_UP=1
}

# member_of PORT: the member index (0..2) whose PostgreSQL listens on PORT.
member_of() {
    local i
    for i in 0 1 2; do
        [ "${PG_PORTS[$i]}" = "$1" ] && {
            echo "$i"
            return
        }
    done
    die "no member of $STATE has PostgreSQL port $1 (ports ${PG_PORTS[*]})"
}

as_postgres() {
    if [ "$IS_ROOT" -eq 1 ]; then
        (cd / && exec setpriv --reuid=postgres --regid=postgres --init-groups -- "$@")
    else
        (cd / && exec "$@")
    fi
}

psql_at() {
    local port="$1"
    shift
    "$(pg_bin)/psql" -X -q -A -t -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"
}

rest() { curl -sf --max-time 3 "http://127.0.0.1:$1$2"; }

# leader_index: the member that leads, from Patroni's /cluster (any member
# answers it); empty when none does.
leader_index() {
    local i out
    for i in 0 1 2; do
        out=$(rest "${REST_PORTS[$i]}" /cluster 2>/dev/null) || continue
        "$PY" -c '
import json, sys
c = json.loads(sys.argv[1])
for m in c.get("members", []):
    if m.get("role") == "leader" and m.get("state") == "running":
        print(m["name"][2:])
' "$out"
        return
    done
}

write_etcd() {
    mkdir -p "$STATE/etcd"
    if [ "$IS_ROOT" -eq 1 ]; then chown postgres:postgres "$STATE/etcd"; fi
    as_postgres setsid etcd --name rwpool-etcd --data-dir "$STATE/etcd/data" \
        --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
        --initial-cluster "rwpool-etcd=http://127.0.0.1:$ETCD_PEER" --initial-cluster-state new \
        --listen-metrics-urls "" >"$STATE/etcd/etcd.log" 2>&1 </dev/null &
    echo $! >"$STATE/etcd/pid"
}

etcd_ready() { curl -sf --max-time 2 "http://127.0.0.1:$ETCD_CLIENT/health" | grep -q '"true"'; }

write_config() {
    local i="$1" bin="$2"
    cat >"$STATE/pg$i.yml" <<EOF
scope: $SCOPE
namespace: /rwpool/
name: pg$i
log:
  level: INFO
restapi:
  listen: 127.0.0.1:${REST_PORTS[$i]}
  connect_address: 127.0.0.1:${REST_PORTS[$i]}
etcd3:
  hosts: 127.0.0.1:$ETCD_CLIENT
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 16777216
    postgresql:
      use_pg_rewind: true
      use_slots: true
      remove_data_directory_on_rewind_failure: true
      remove_data_directory_on_diverged_timelines: true
      parameters:
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 128MB
        max_connections: 200
  initdb:
    - encoding: UTF8
    - locale: C
    - data-checksums
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:${PG_PORTS[$i]}
  connect_address: 127.0.0.1:${PG_PORTS[$i]}
  data_dir: $STATE/pg$i
  bin_dir: $bin
  pgpass: $STATE/pgpass$i
  authentication:
    superuser:
      username: postgres
      password: postgres-test-pw
    replication:
      username: replicator
      password: replicator-test-pw
    rewind:
      username: postgres
      password: postgres-test-pw
  parameters:
    unix_socket_directories: $STATE/sock
    shared_buffers: 32MB
    fsync: "off"
    full_page_writes: "on"
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
EOF
}

agent_pid() { pgrep -o -f -- "patroni $STATE/pg$1.yml" 2>/dev/null || true; }
postmaster_pid() { head -1 "$STATE/pg$1/postmaster.pid" 2>/dev/null | tr -dc 0-9 || true; }

start_agent() {
    local i="$1"
    [ -n "$(agent_pid "$i")" ] && return 0
    as_postgres setsid patroni "$STATE/pg$i.yml" >>"$STATE/pg$i.log" 2>&1 </dev/null &
    wait_until "$TIMEOUT" rest_answers "$i" || {
        tail -20 "$STATE/pg$i.log" >&2 || true
        die "Patroni pg$i does not answer on ${REST_PORTS[$i]}"
    }
}

# rest_answers I: Patroni's REST API of member I answers at all (it
# answers 503 while PostgreSQL is not running, which is still an answer).
rest_answers() { curl -s --max-time 2 -o /dev/null "http://127.0.0.1:${REST_PORTS[$1]}/patroni"; }

# kill_member I: SIGKILL the agent, the postmaster and its children.
kill_member() {
    local i="$1" a pm kids
    a=$(agent_pid "$i")
    pm=$(postmaster_pid "$i")
    kids=""
    [ -n "$a" ] && kill -KILL "$a" 2>/dev/null || true
    # The postmaster is frozen before its children are listed, so that it
    # forks none after the list. Listed first, a backend forked for a new
    # connection between the list and the kill outlived the "crash" and
    # took a write, whose connection broke when the backend noticed its
    # postmaster gone (TestPatroniLeaderCrash in CI: a write issued after
    # the kill failed with its outcome unknown).
    if pid_alive "$pm"; then
        kill -STOP "$pm" 2>/dev/null || true
        kids=$(pgrep -P "$pm" 2>/dev/null | tr '\n' ' ' || true)
        kill -KILL "$pm" 2>/dev/null || true
    fi
    # shellcheck disable=SC2086
    [ -n "$kids" ] && kill -KILL $kids 2>/dev/null || true
    wait_until 10 pid_gone "$pm" || true
    for p in $(pgrep -f -- "-D $STATE/pg$i\$" 2>/dev/null || true) $(pgrep -f -- "$STATE/pg$i.yml" 2>/dev/null || true); do
        kill -KILL "$p" 2>/dev/null || true
    done
}

stop_member() {
    local i="$1" a pm
    a=$(agent_pid "$i")
    pm=$(postmaster_pid "$i")
    if [ -n "$a" ]; then
        kill -TERM "$a" 2>/dev/null || true
        wait_until 20 pid_gone "$a" || true
    fi
    kill_member "$i"
}

cmd_down() {
    [ -d "$STATE" ] || return 0
    [ -e "$STATE/$MARKER" ] || die "$STATE is not a Patroni state dir (no $MARKER); not touching it"
    ports
    local i p
    for i in 0 1 2; do stop_member "$i"; done
    p=$(head -1 "$STATE/haproxy.pid" 2>/dev/null | tr -dc 0-9 || true)
    if pid_alive "$p"; then
        kill -TERM "$p" 2>/dev/null || true
        wait_until 10 pid_gone "$p" || kill -KILL "$p" 2>/dev/null || true
    fi
    p=$(cat "$STATE/etcd/pid" 2>/dev/null || true)
    if pid_alive "$p"; then
        kill -TERM "$p" 2>/dev/null || true
        wait_until 10 pid_gone "$p" || kill -KILL "$p" 2>/dev/null || true
    fi
    for p in $(pgrep -f -- "$STATE/" || true); do
        kill -KILL "$p" 2>/dev/null || true
    done
    rm -rf "$STATE"
    log "Patroni cluster down ($STATE)"
}

# streaming_all: every member runs, one leads, and the leader sees every
# other one streaming, replayed up to its current position.
streaming_all() {
    local l n
    l=$(leader_index)
    [ -n "$l" ] || return 1
    n=$(psql_at "${PG_PORTS[$l]}" -c "SELECT count(*) FROM pg_stat_replication
        WHERE state = 'streaming' AND replay_lsn >= pg_current_wal_lsn()" 2>/dev/null) || return 1
    [ "$n" = 2 ]
}

cmd_wait_members() {
    ports
    local i
    for i in 0 1 2; do start_agent "$i"; done
    wait_until "$TIMEOUT" streaming_all || {
        cmd_status >&2 || true
        die "the members are not all streaming from a leader"
    }
}

writable_at() { [ "$(psql_at "$1" -c 'SELECT NOT pg_is_in_recovery()' 2>/dev/null)" = t ]; }

addrs() {
    local out="" p
    for p in "$@"; do out="$out,127.0.0.1:$p"; done
    echo "${out#,}"
}

write_env() {
    {
        echo "# rwpool test Patroni cluster, written by scripts/patroni.sh up on $(date -Is)"
        echo "export RWPOOL_PATRONI_DIR='$STATE'"
        echo "export RWPOOL_PATRONI_SCRIPT='$SCRIPT_PATH'"
        echo "export RWPOOL_PATRONI_PG=$(addrs "${PG_PORTS[@]}")"
        echo "export RWPOOL_PATRONI_REST=$(addrs "${REST_PORTS[@]}")"
        echo "export RWPOOL_PATRONI_ETCD=127.0.0.1:$ETCD_CLIENT"
        echo "export RWPOOL_PATRONI_USER=$APP_USER"
        echo "export RWPOOL_PATRONI_PASSWORD=$APP_PASSWORD"
        echo "export RWPOOL_PATRONI_DB=$APP_DB"
        if [ "${HAPROXY_UP:-0}" = 1 ]; then
            echo "export RWPOOL_PATRONI_HAPROXY_WRITE=127.0.0.1:$HA_WRITE"
            echo "export RWPOOL_PATRONI_HAPROXY_READ=127.0.0.1:$HA_READ"
        fi
    } >"$STATE/env.tmp"
    chmod 0644 "$STATE/env.tmp"
    mv "$STATE/env.tmp" "$STATE/env"
}

cmd_up() {
    local t0 bin i l p
    t0=$SECONDS
    ensure_packages
    bin=$(pg_bin)
    cmd_down
    ports
    for p in "${PG_PORTS[@]}" "${REST_PORTS[@]}" "$ETCD_PEER" "$ETCD_CLIENT" "$HA_WRITE" "$HA_READ"; do
        ! port_open "$p" || die "port $p is taken: another cluster on a nearby port base?"
    done
    [ -x "$(dirname "$SCRIPT_PATH")/cluster.sh" ] &&
        "$(dirname "$SCRIPT_PATH")/cluster.sh" reserve-ports "${PG_PORTS[@]}" "${REST_PORTS[@]}" "$ETCD_PEER" "$ETCD_CLIENT" "$HA_WRITE" "$HA_READ" || true
    mkdir -p "$STATE/sock"
    touch "$STATE/$MARKER"
    echo "$BASE" >"$STATE/base"
    for i in 0 1 2; do write_config "$i" "$bin"; done
    if [ "$IS_ROOT" -eq 1 ]; then chown -R postgres:postgres "$STATE"; fi
    chmod 0755 "$STATE"
    write_etcd
    wait_until "$TIMEOUT" etcd_ready || {
        tail -20 "$STATE/etcd/etcd.log" >&2 || true
        die "etcd does not answer on $ETCD_CLIENT"
    }
    # The first member bootstraps (initdb) and leads; the others clone it.
    start_agent 0
    wait_until "$TIMEOUT" writable_at "${PG_PORTS[0]}" || {
        tail -30 "$STATE/pg0.log" >&2 || true
        die "pg0 did not become a writable leader"
    }
    start_agent 1
    start_agent 2
    cmd_wait_members
    l=$(leader_index)
    psql_at "${PG_PORTS[$l]}" -c "CREATE ROLE $APP_USER LOGIN PASSWORD '$APP_PASSWORD'" \
        -c "CREATE DATABASE $APP_DB OWNER $APP_USER" >/dev/null
    start_haproxy
    write_env
    log "Patroni cluster up in $((SECONDS - t0)) s: PostgreSQL ${PG_PORTS[*]}, REST ${REST_PORTS[*]}, etcd $ETCD_CLIENT, leader pg$l; env: $STATE/env"
}

cmd_status() {
    [ -r "$STATE/env" ] || die "no Patroni cluster in $STATE (no env file)"
    ports
    local i out
    for i in 0 1 2; do
        out=$(rest "${REST_PORTS[$i]}" /cluster 2>/dev/null) && break
    done
    [ -n "${out:-}" ] || die "no Patroni member answers"
    "$PY" -c '
import json, sys
c = json.loads(sys.argv[1])
bad, leaders = 0, 0
for m in sorted(c.get("members", []), key=lambda m: m["name"]):
    print("%-4s %-6s %-8s %-10s timeline %-3s lag %s" % (m["name"], m.get("port"), m.get("role"), m.get("state"), m.get("timeline", "-"), m.get("lag", "-")))
    leaders += m.get("role") == "leader"
    bad += m.get("state") not in ("running", "streaming")
sys.exit(1 if bad or leaders != 1 or len(c.get("members", [])) != 3 else 0)
' "$out"
}

cmd_leader() {
    ports
    local l
    l=$(leader_index)
    [ -n "$l" ] || die "no member leads"
    echo "${PG_PORTS[$l]}"
}

cmd_switchover() {
    ports
    local l c i body out
    l=$(leader_index)
    [ -n "$l" ] || die "no member leads: no switchover"
    if [ -n "${1:-}" ]; then
        c=$(member_of "$1")
    else
        for i in 0 1 2; do
            [ "$i" != "$l" ] && rest "${REST_PORTS[$i]}" /replica >/dev/null 2>&1 && {
                c=$i
                break
            }
        done
    fi
    [ -n "${c:-}" ] || die "no running standby to switch over to"
    body="{\"leader\": \"pg$l\", \"candidate\": \"pg$c\"}"
    out=$(curl -s --max-time 60 -w ' HTTP %{http_code}' -X POST -H 'Content-Type: application/json' \
        -d "$body" "http://127.0.0.1:${REST_PORTS[$l]}/switchover") || die "switchover: $out"
    case "$out" in *"HTTP 200") ;; *) die "switchover pg$l -> pg$c: $out" ;; esac
    wait_until "$TIMEOUT" writable_at "${PG_PORTS[$c]}" || die "pg$c is not writable after the switchover"
    log "switched over: pg$l -> pg$c (${PG_PORTS[$c]})"
}

# tag_is I on|off: member I's REST API reports the noloadbalance tag as
# asked.
tag_is() {
    local got
    got=$(rest "${REST_PORTS[$1]}" /patroni | python3 -c 'import json,sys; print("on" if json.load(sys.stdin).get("tags", {}).get("noloadbalance") else "off")' 2>/dev/null) || return 1
    [ "$got" = "$2" ]
}

# cmd_tag_node PORT on|off: sets or clears the member's noloadbalance tag
# (Patroni's "no reads here") and makes Patroni reload its configuration,
# as an operator taking a replica out of the reads would.
cmd_tag_node() {
    local i
    ports
    i=$(member_of "$1")
    case "$2" in on | off) ;; *) die "tag-node: want on or off" ;; esac
    sed -i '/^tags:/,$d' "$STATE/pg$i.yml"
    [ "$2" = on ] && printf 'tags:\n  noloadbalance: true\n' >>"$STATE/pg$i.yml"
    kill -HUP "$(agent_pid "$i")"
    wait_until "$TIMEOUT" tag_is "$i" "$2" || die "pg$i does not report noloadbalance=$2"
    log "pg$i ($1): noloadbalance $2"
}

main() {
    case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    env) cat "$STATE/env" ;;
    leader) cmd_leader ;;
    kill-node)
        [ "$#" -eq 2 ] || die "usage: kill-node PORT"
        ports
        kill_member "$(member_of "$2")"
        log "killed pg$(member_of "$2") ($2)"
        ;;
    start-node)
        [ "$#" -eq 2 ] || die "usage: start-node PORT"
        ports
        start_agent "$(member_of "$2")"
        ;;
    switchover) cmd_switchover "${2:-}" ;;
    tag-node)
        [ "$#" -eq 3 ] || die "usage: tag-node PORT on|off"
        cmd_tag_node "$2" "$3"
        ;;
    wait-members) cmd_wait_members ;;
    *)
        sed -n '2,/^$/p' "$SCRIPT_PATH" | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
    esac
}

main "$@"
exit "$?"

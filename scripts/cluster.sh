#!/usr/bin/env bash
# scripts/cluster.sh: start and stop a throwaway, *really replicated*
# PostgreSQL + MariaDB test cluster on 127.0.0.1 for rwpool's integration
# tests. Each engine gets one primary and two streaming replicas.
#
# Usage: scripts/cluster.sh COMMAND [ARGS]
#
#   up                 stop and wipe any old cluster in the state dir, start all
#                      six servers, wait until replication works end to end,
#                      then write $RWPOOL_CLUSTER_DIR/env
#   down               stop every server started from the state dir and delete
#                      the dir (safe to run when nothing is up)
#   status             one line per node: role, process state, reachability,
#                      replication state. Exit status 1 if any node isn't up.
#   env                print the env file (shell `export` lines)
#   wait-sync          wait until every running replica has replayed
#                      everything its primary had at the time of the call
#
#   Fault injection for one node; PORT is any of the six ports:
#   stop-node PORT     clean shutdown (PG: pg_ctl -m fast; MariaDB: SIGTERM)
#   start-node PORT    start the node again; returns once it takes queries
#                      (no-op if it's already running)
#   kill-node PORT     SIGKILL all the node's processes (simulated crash)
#   hang-node PORT     SIGSTOP all the node's processes (simulated hang: TCP
#                      connections are accepted by the kernel, nothing answers)
#   resume-node PORT   SIGCONT the processes stopped by hang-node
#   delay-node PORT SECONDS
#                      delay replay on a replica by SECONDS (0 ends the delay):
#                      PostgreSQL recovery_min_apply_delay, MariaDB
#                      MASTER_DELAY; the replica keeps receiving, it applies late
#   promote-node PORT  make a replica writable on its own: PostgreSQL
#                      pg_promote(); MariaDB STOP SLAVE + read_only=0
#   rejoin-node PORT   put PORT back where `up` made it, after promote-node
#                      or repoint-node. A replica: a replica of the original
#                      primary again (PostgreSQL: a new base backup; MariaDB:
#                      read_only=1, RESET MASTER, CHANGE MASTER back to the
#                      original primary; its GTID position is kept where the
#                      primary has all the node's transactions, as after a
#                      switchover and back, else reset to what it last
#                      applied from the primary: what it wrote on its own
#                      is forgotten). The original primary (MariaDB, after
#                      repoint-node): a switchback: the node it replicates
#                      from is made read-only, PORT catches up with it,
#                      stops replicating and is writable again (PostgreSQL:
#                      a primary is never re-pointed; a no-op if it is one).
#                      Restore order after a switchover: the primary first,
#                      then the replicas, then wait-sync.
#   repoint-node PORT TOPORT
#                      make PORT (a replica, or MariaDB's original primary)
#                      replicate from TOPORT, e.g. the node promote-node
#                      promoted; returns once it streams from TOPORT and has
#                      everything TOPORT had. PostgreSQL: the standby's slot
#                      (primary_slot_name) is created on TOPORT, then ALTER
#                      SYSTEM SET primary_conninfo + pg_reload_conf() (PG >= 13
#                      restarts the WAL receiver, no server restart);
#                      recovery_target_timeline=latest (the default) follows
#                      TOPORT's new timeline. A standby that replayed past
#                      the point where TOPORT's timeline forked off (it got
#                      WAL from the dead primary that TOPORT never had)
#                      cannot follow it: it is re-cloned from TOPORT
#                      (pg_basebackup) instead. MariaDB: read_only=1, STOP
#                      SLAVE, CHANGE MASTER TO TOPORT with
#                      MASTER_USE_GTID=current_pos, START SLAVE (current_pos:
#                      a former primary's own binlog is newer than its
#                      gtid_slave_pos, which slave_pos would replay from).
#   reserve-ports PORT...
#                      take PORTs out of the ephemeral range, as `up` does
#                      for the nodes (root only; scripts/proxies.sh uses it)
#   set-read-only PORT on|off
#                      PostgreSQL default_transaction_read_only, MariaDB
#                      read_only (e.g. to demote a primary)
#
# Environment:
#   RWPOOL_CLUSTER_DIR    state dir (default /tmp/rwpool-cluster)
#   RWPOOL_PG_PORT_BASE   PostgreSQL primary port; standbys +1, +2 (default 55432)
#   RWPOOL_MY_PORT_BASE   MariaDB primary port; replicas +1, +2 (default 55306)
#   RWPOOL_PG_BIN         PostgreSQL server bin dir (default: the newest
#                         /usr/lib/postgresql/*/bin)
#   RWPOOL_READY_TIMEOUT  bound in seconds for each wait (default 60)
#
# Env file ($RWPOOL_CLUSTER_DIR/env, `export K=V` lines; tests source it):
#   RWPOOL_PG_PRIMARY=127.0.0.1:55432  RWPOOL_PG_REPLICAS=127.0.0.1:55433,...
#   RWPOOL_MY_PRIMARY=127.0.0.1:55306  RWPOOL_MY_REPLICAS=127.0.0.1:55307,...
#   RWPOOL_DB_USER, RWPOOL_DB_PASSWORD, RWPOOL_DB_NAME   the app account
#   RWPOOL_CLUSTER_DIR, RWPOOL_CLUSTER_SCRIPT (absolute path of this script)
#   RWPOOL_PG_PORTS, RWPOOL_MY_PORTS (comma-separated, primary first)
#   RWPOOL_PG_BIN, RWPOOL_PG_SOCKET_DIR, RWPOOL_PG_ADMIN_USER, RWPOOL_MY_ADMIN_USER
#   per node: RWPOOL_PG_{DATA,PIDFILE,LOG}_<port>,
#             RWPOOL_MY_{CNF,DATA,PIDFILE,SOCKET,LOG}_<port>
#
# Two clusters can coexist if they use different RWPOOL_CLUSTER_DIR and port
# bases. The port bases only matter for `up`; every other command reads the
# ports from the state dir.
#
# Credentials (loopback-only test infra):
#   application:  app / app-secret-pw, database rwpool, no admin privileges
#   PG admin:     postgres (trust auth, no password)
#   MariaDB admin: root with an empty password, also over TCP on 127.0.0.1
#
# Nothing here touches the system PostgreSQL (5432) or MariaDB (3306): every
# server gets its own data dir, socket, pid file and log under the state dir,
# and MariaDB tools run with --no-defaults so /etc/mysql/my.cnf (which names
# the system server's socket and datadir) is never read.

# shellcheck disable=SC2317 # helpers are called indirectly, via wait_until
set -euo pipefail

# ---------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------

SCRIPT_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"

STATE="${RWPOOL_CLUSTER_DIR:-/tmp/rwpool-cluster}"
# Absolute path: it ends up in server configs and the env file.
case "$STATE" in /*) ;; *) STATE="$PWD/$STATE" ;; esac
STATE="${STATE%/}"

TIMEOUT="${RWPOOL_READY_TIMEOUT:-60}"
MARKER=".rwpool-cluster" # proves that a dir is ours before `rm -rf`

APP_USER=app
APP_PASSWORD=app-secret-pw
APP_DB=rwpool
REPL_USER=repl
REPL_PASSWORD=repl-secret-pw
PROBE_TABLE=rwpool_cluster_probe

# log, die, wait_until, port_open, pid_alive, pid_gone, pid_state and
# IS_ROOT; it also clears the client settings the caller may have exported
# (PGHOST, PGSERVICE, MYSQL_PWD, MYSQL_HOST, ...), which must not redirect
# our own admin connections.
LOG_TAG=cluster
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# ---------------------------------------------------------------------------
# Generic helpers
# ---------------------------------------------------------------------------

# show_log FILE: tail of a server log, for error reports.
show_log() {
    local f="$1"
    if [ -r "$f" ]; then
        printf -- '----- last 40 lines of %s -----\n' "$f" >&2
        tail -n 40 "$f" >&2 || true
        printf -- '----- end of %s -----\n' "$f" >&2
    else
        printf -- '(no log at %s)\n' "$f" >&2
    fi
}

# as_user USER CMD...: servers refuse to run as root, so when we are root we
# drop to the service account. Otherwise everything runs as the caller. The
# `cd /` avoids "could not change directory" noise when the caller's cwd is
# not readable by that account.
as_user() {
    local user="$1"
    shift
    if [ "$IS_ROOT" -eq 1 ]; then
        (cd / && runuser -u "$user" -- "$@")
    else
        (cd / && "$@")
    fi
}

# own USER PATH...: chown when root (no-op otherwise).
own() {
    local user="$1"
    shift
    if [ "$IS_ROOT" -eq 1 ]; then chown -R "$user:$user" "$@"; fi
}

# pid_stopped PID: true if PID is stopped by a signal (hang-node).
pid_stopped() { [ "$(pid_state "$1")" = T ]; }

# pid_cmdline PID: the command line with NULs turned into spaces.
pid_cmdline() {
    local args=()
    mapfile -d '' args <"/proc/$1/cmdline" 2>/dev/null || true
    echo "${args[*]:-}"
}

# pids_gone PID...: true once none of the PIDs is alive.
pids_gone() {
    local p
    for p in "$@"; do pid_alive "$p" && return 1; done
    return 0
}

# pids_reaped PID...: true once no PID has a /proc entry, zombies included.
pids_reaped() {
    local p
    for p in "$@"; do [ ! -e "/proc/$p" ] || return 1; done
    return 0
}

# signal_pids SIG PID...: best effort (a pid may exit under our feet).
signal_pids() {
    local sig="$1"
    shift
    [ "$#" -gt 0 ] || return 0
    kill "-$sig" "$@" 2>/dev/null || true
}

# port_in_use PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

is_port() { [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65535 ]; }

# ---------------------------------------------------------------------------
# Binaries (installed from Debian packages on a fresh CI machine)
# ---------------------------------------------------------------------------

PG_BIN="" MYSQLD="" MY_INSTALL_DB="" MY_CLIENT=""

find_binaries() {
    PG_BIN="${RWPOOL_PG_BIN:-}"
    if [ -z "$PG_BIN" ]; then
        # shellcheck disable=SC2012 # these paths are plain
        PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    fi
    local c
    MYSQLD=""
    for c in "$(command -v mariadbd || true)" /usr/sbin/mariadbd /usr/sbin/mysqld; do
        if [ -n "$c" ] && [ -x "$c" ]; then MYSQLD="$c" && break; fi
    done
    MY_INSTALL_DB=$(command -v mariadb-install-db || command -v mysql_install_db || true)
    MY_CLIENT=$(command -v mariadb || command -v mysql || true)
}

missing_binaries() {
    local m=()
    local b
    for b in initdb pg_ctl pg_basebackup postgres psql; do
        [ -n "$PG_BIN" ] && [ -x "$PG_BIN/$b" ] || m+=("$b")
    done
    [ -n "$MYSQLD" ] || m+=(mariadbd)
    [ -n "$MY_INSTALL_DB" ] || m+=(mariadb-install-db)
    [ -n "$MY_CLIENT" ] || m+=(mariadb)
    if [ "$IS_ROOT" -eq 1 ]; then
        id postgres >/dev/null 2>&1 || m+=("user:postgres")
        id mysql >/dev/null 2>&1 || m+=("user:mysql")
    fi
    echo "${m[*]:-}"
}

ensure_binaries() {
    find_binaries
    local missing
    missing=$(missing_binaries)
    [ -n "$missing" ] || return 0
    if [ "$IS_ROOT" -ne 1 ] || ! command -v apt-get >/dev/null 2>&1; then
        die "missing: $missing. Install the postgresql and mariadb-server packages (or run this script as root on Debian/Ubuntu to have it done)."
    fi
    log "missing: $missing; installing postgresql and mariadb-server via apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # The packages also set up and start system instances on 5432/3306; we
    # neither need nor touch those.
    apt-get install -y -q postgresql postgresql-client mariadb-server mariadb-client
    find_binaries
    missing=$(missing_binaries)
    [ -z "$missing" ] || die "still missing after apt-get install: $missing"
}

# ---------------------------------------------------------------------------
# State dir layout
# ---------------------------------------------------------------------------
#   $STATE/.rwpool-cluster       marker
#   $STATE/env                   env file, written once `up` has verified all
#   $STATE/pg/run/               PostgreSQL unix sockets (all three nodes)
#   $STATE/pg/<port>/            PostgreSQL data dir
#   $STATE/pg/<port>.log         PostgreSQL server log
#   $STATE/my/<port>/my.cnf      MariaDB config (the only option file read)
#   $STATE/my/<port>/data/       MariaDB data dir
#   $STATE/my/<port>/{mariadbd.sock,mariadbd.pid,error.log,stdout.log}

pg_data() { echo "$STATE/pg/$1"; }
pg_log() { echo "$STATE/pg/$1.log"; }
my_dir() { echo "$STATE/my/$1"; }

load_env() {
    [ -r "$STATE/env" ] || die "no cluster at $STATE (no env file; run '$0 up' first)"
    # shellcheck disable=SC1091
    . "$STATE/env"
    PG_BIN="$RWPOOL_PG_BIN"
    find_binaries
    PG_BIN="$RWPOOL_PG_BIN"
}

# node_kind PORT: "pg" or "my", from the env file.
node_kind() {
    local v="RWPOOL_PG_DATA_$1" w="RWPOOL_MY_CNF_$1"
    if [ -n "${!v:-}" ]; then
        echo pg
    elif [ -n "${!w:-}" ]; then
        echo my
    else
        die "port $1 is not a node of the cluster in $STATE (nodes: $RWPOOL_PG_PORTS,$RWPOOL_MY_PORTS)"
    fi
}

# node_role PORT: "primary" or "replica".
node_role() {
    case ",$RWPOOL_PG_PRIMARY,$RWPOOL_MY_PRIMARY," in
    *",127.0.0.1:$1,"*) echo primary ;;
    *) echo replica ;;
    esac
}

# ---------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------

# pg_q PORT DB SQL: run SQL as the postgres superuser over TCP, tuples only.
pg_q() {
    PGCONNECT_TIMEOUT=3 "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 \
        -h 127.0.0.1 -p "$1" -U postgres -d "$2" -c "$3"
}

pg_ready() { pg_q "$1" postgres 'SELECT 1' >/dev/null 2>&1; }

# pg_pid_of_dir DATA: the postmaster's pid if it runs (checked against its
# command line, so a stale postmaster.pid whose pid got reused is not
# trusted).
pg_pid_of_dir() {
    local data="$1" pid
    pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    pid_alive "$pid" || return 1
    case "$(pid_cmdline "$pid")" in *"$data"*) echo "$pid" ;; *) return 1 ;; esac
}

# pg_children PID: the postmaster's children (backends, walsenders, ...).
# Callers that must catch all of them SIGSTOP the postmaster first, so it
# can't fork new ones in between.
pg_children() { pgrep -P "$1" 2>/dev/null | tr '\n' ' ' || true; }

pg_start_dir() {
    local port="$1" data log
    data=$(pg_data "$port")
    log=$(pg_log "$port")
    # After kill-node, postmaster.pid and the socket lock file are stale.
    # PostgreSQL refuses to start while the pid named in them exists, and a
    # SIGKILLed postmaster stays a zombie until PID 1 reaps it, which can
    # take a second or more on VMs/containers with a lazy init. No live
    # postmaster owns this dir (pg_pid_of_dir), so both files are safe to
    # remove.
    if ! pg_pid_of_dir "$data" >/dev/null; then
        rm -f "$data/postmaster.pid" "$STATE/pg/run/.s.PGSQL.$port.lock"
    fi
    # pg_ctl detaches the postmaster (own session, output to -l) so it
    # outlives this script and whoever ran it.
    if ! as_user postgres "$PG_BIN/pg_ctl" -D "$data" -l "$log" -w -t "$TIMEOUT" start >/dev/null; then
        show_log "$log"
        die "PostgreSQL on port $port did not start"
    fi
    if ! wait_until "$TIMEOUT" pg_ready "$port"; then
        show_log "$log"
        die "PostgreSQL on port $port does not accept connections"
    fi
}

# pg_stop_dir DATA MODE: stop a PostgreSQL instance by data dir; falls back to
# SIGKILL if pg_ctl can't do it within the timeout.
pg_stop_dir() {
    local data="$1" mode="$2" pid
    pid=$(pg_pid_of_dir "$data") || return 0
    # A hung (SIGSTOPped) server can't react to the shutdown signal.
    # shellcheck disable=SC2046 # pid list
    signal_pids CONT "$pid" $(pg_children "$pid")
    if [ -n "$PG_BIN" ] && [ -x "$PG_BIN/pg_ctl" ] &&
        as_user postgres "$PG_BIN/pg_ctl" -D "$data" -m "$mode" -w -t "$TIMEOUT" stop >/dev/null 2>&1; then
        return 0
    fi
    log "pg_ctl stop failed for $data; sending SIGKILL"
    pg_kill_pid "$pid"
}

# pg_kill_pid POSTMASTER_PID: SIGKILL the postmaster and all its children.
pg_kill_pid() {
    local pid="$1" kids
    signal_pids STOP "$pid"
    kids=$(pg_children "$pid")
    # shellcheck disable=SC2086
    signal_pids KILL "$pid" $kids
    # shellcheck disable=SC2086
    wait_until "$TIMEOUT" pids_gone "$pid" $kids || die "PostgreSQL pid $pid survived SIGKILL"
}

# pg_conf_append DATA LINES...: append settings (later lines win).
pg_conf_append() {
    local data="$1"
    shift
    printf '%s\n' "$@" | as_user postgres tee -a "$data/postgresql.conf" >/dev/null
}

pg_up_primary() {
    local port="$1" data
    data=$(pg_data "$port")
    log "initdb $data"
    if ! as_user postgres "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust \
        -E UTF8 --locale=C --no-sync --no-instructions --wal-segsize=1 \
        >"$STATE/pg/initdb.log" 2>&1; then
        show_log "$STATE/pg/initdb.log"
        die "initdb failed"
    fi
    # Everything lives in postgresql.conf, so the standbys inherit it through
    # pg_basebackup and only override port and cluster_name.
    #  - trust auth: the app password is accepted but never checked;
    #  - fsync=off: throwaway data, only OS crashes could corrupt it;
    #  - synchronous_commit stays on: with fsync=off commits are cheap anyway,
    #    and `off` would delay WAL shipping by up to 3 x wal_writer_delay,
    #    i.e. add artificial replication lag;
    #  - short receiver/retry timeouts so standbys reconnect quickly after a
    #    primary restart in fault-injection tests;
    #  - hot_standby_feedback avoids read queries on standbys being cancelled
    #    by vacuum on the primary;
    #  - 1 MB WAL segments (initdb --wal-segsize) and a small min_wal_size:
    #    a node then takes ~35 MB instead of ~100 MB, which makes up/down
    #    noticeably faster on a busy CI disk.
    pg_conf_append "$data" \
        "" \
        "# --- rwpool test cluster (scripts/cluster.sh) ---" \
        "listen_addresses = '127.0.0.1'" \
        "port = $port" \
        "unix_socket_directories = '$STATE/pg/run'" \
        "cluster_name = 'rwpool-pg-$port'" \
        "max_connections = 200" \
        "shared_buffers = 64MB" \
        "wal_level = replica" \
        "max_wal_senders = 10" \
        "max_replication_slots = 10" \
        "hot_standby = on" \
        "hot_standby_feedback = on" \
        "wal_receiver_timeout = '10s'" \
        "wal_sender_timeout = '10s'" \
        "wal_retrieve_retry_interval = '1s'" \
        "min_wal_size = '4MB'" \
        "max_wal_size = '256MB'" \
        "fsync = off" \
        "logging_collector = off" \
        "log_line_prefix = '%m [%p] %q%u@%d '"
    as_user postgres tee "$data/pg_hba.conf" >/dev/null <<'EOF'
# rwpool test cluster: loopback only, trust everything (incl. replication).
local   all          all                 trust
local   replication  all                 trust
host    all          all   127.0.0.1/32  trust
host    replication  all   127.0.0.1/32  trust
EOF
    log "starting primary on 127.0.0.1:$port"
    pg_start_dir "$port"
    pg_q "$port" postgres "CREATE ROLE $APP_USER LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '$APP_PASSWORD'" >/dev/null
    pg_q "$port" postgres "CREATE DATABASE $APP_DB OWNER $APP_USER" >/dev/null
}

pg_up_standby() {
    local primary="$1" port="$2" data
    data=$(pg_data "$port")
    log "pg_basebackup -R from $primary for standby on 127.0.0.1:$port"
    # -S: stream through the standby's slot (see pg_up); -R records it as
    # primary_slot_name so the standby keeps using it.
    if ! as_user postgres "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$primary" -U postgres \
        -D "$data" -R -X stream -c fast -S "standby_$port" --no-sync \
        >"$STATE/pg/basebackup-$port.log" 2>&1; then
        show_log "$STATE/pg/basebackup-$port.log"
        die "pg_basebackup for port $port failed"
    fi
    # The clone copies the source's postgresql.auto.conf, and with it a
    # default_transaction_read_only = on that set-read-only left there (a
    # restore that rejoins before it turns the primary writable again): the
    # standby would stay read-only once promoted. A node where `up` put it
    # has no such setting.
    as_user postgres sed -i '/^default_transaction_read_only/d' "$data/postgresql.auto.conf"
    pg_conf_append "$data" "port = $port" "cluster_name = 'rwpool-pg-$port'"
    log "starting standby on 127.0.0.1:$port"
    pg_start_dir "$port"
}

# pg_lsn_replayed PORT LSN: the standby replayed at least LSN.
pg_lsn_replayed() {
    [ "$(pg_q "$1" postgres "SELECT pg_last_wal_replay_lsn() >= '$2'::pg_lsn" 2>/dev/null)" = t ]
}

pg_probe_visible() {
    [ "$(pg_q "$1" "$APP_DB" "SELECT count(*) FROM $PROBE_TABLE" 2>/dev/null)" = 1 ]
}

# pg_sync PRIMARY STANDBY...: wait until the standbys replayed everything the
# primary has written so far.
pg_sync() {
    local primary="$1" lsn s
    shift
    lsn=$(pg_q "$primary" postgres 'SELECT pg_current_wal_lsn()')
    for s in "$@"; do
        if ! wait_until "$TIMEOUT" pg_lsn_replayed "$s" "$lsn"; then
            show_log "$(pg_log "$s")"
            die "PostgreSQL standby $s did not replay up to $lsn within ${TIMEOUT}s"
        fi
    done
}

pg_up() {
    LOG_TAG=pg
    local p0="$PG_PORT_BASE" p1=$((PG_PORT_BASE + 1)) p2=$((PG_PORT_BASE + 2)) s
    mkdir -p "$STATE/pg/run"
    own postgres "$STATE/pg"
    pg_up_primary "$p0"
    # One physical replication slot per standby, so that the primary keeps
    # the WAL a stopped/killed/hung standby needs to catch up. They are
    # created here, reserving WAL immediately, rather than by pg_basebackup
    # -C: that creates the slot only after the backup has started, and the
    # checkpoint of the other, concurrent base backup can remove the WAL
    # segment in between ("requested WAL segment ... has already been
    # removed").
    for s in "$p1" "$p2"; do
        pg_q "$p0" postgres "SELECT pg_create_physical_replication_slot('standby_$s', true)" >/dev/null
    done
    # The two base backups and standby starts are independent: run them in
    # parallel.
    local pids=() rc=0
    for s in "$p1" "$p2"; do
        pg_up_standby "$p0" "$s" &
        pids+=("$!")
    done
    for s in "${pids[@]}"; do wait "$s" || rc=1; done
    [ "$rc" -eq 0 ] || die "starting the standbys failed"

    log "checking streaming replication"
    for s in "$p1" "$p2"; do
        [ "$(pg_q "$s" postgres 'SELECT pg_is_in_recovery()')" = t ] ||
            die "PostgreSQL on $s is not a standby"
    done
    pg_q "$p0" "$APP_DB" "CREATE TABLE $PROBE_TABLE (id int); INSERT INTO $PROBE_TABLE VALUES (1)" >/dev/null
    for s in "$p1" "$p2"; do
        if ! wait_until "$TIMEOUT" pg_probe_visible "$s"; then
            show_log "$(pg_log "$s")"
            die "probe row written on the primary never showed up on standby $s"
        fi
    done
    pg_q "$p0" "$APP_DB" "DROP TABLE $PROBE_TABLE" >/dev/null
    pg_sync "$p0" "$p1" "$p2"
    log "PostgreSQL ready: primary $p0, standbys $p1 $p2"
}

# ---------------------------------------------------------------------------
# MariaDB
# ---------------------------------------------------------------------------

# my_q PORT SQL: run SQL as root over TCP (root@127.0.0.1, empty password).
my_q() {
    "$MY_CLIENT" --no-defaults --protocol=TCP -h 127.0.0.1 -P "$1" -u root \
        --connect-timeout=3 -N -B -e "$2"
}

my_ready() { my_q "$1" 'SELECT 1' >/dev/null 2>&1; }

# my_pid_of_dir DIR: mariadbd's pid if it runs (verified against its command
# line, which names our my.cnf).
my_pid_of_dir() {
    local dir="$1" pid
    pid=$(cat "$dir/mariadbd.pid" 2>/dev/null || true)
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    pid_alive "$pid" || return 1
    case "$(pid_cmdline "$pid")" in *"$dir/my.cnf"*) echo "$pid" ;; *) return 1 ;; esac
}

my_write_cnf() {
    local port="$1" role="$2" dir
    dir=$(my_dir "$port")
    mkdir -p "$dir"
    {
        echo "# rwpool test cluster node $port ($role), generated by scripts/cluster.sh"
        echo "[mariadbd]"
        # mariadbd started as root switches to this account itself.
        if [ "$IS_ROOT" -eq 1 ]; then echo "user = mysql"; fi
        cat <<EOF
datadir = $dir/data
port = $port
bind-address = 127.0.0.1
socket = $dir/mariadbd.sock
pid-file = $dir/mariadbd.pid
log-error = $dir/error.log
skip-name-resolve
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
max-connections = 300
# Replication: server-id = port is unique within the topology; every node
# writes a binlog (log-slave-updates) so any replica could be promoted.
server-id = $port
log-bin = mysql-bin
log-slave-updates = ON
binlog-format = ROW
gtid-strict-mode = ON
relay-log = relay-bin
report-host = 127.0.0.1
report-port = $port
# Detect a dead/hung primary within seconds instead of a minute.
slave-net-timeout = 10
# Throwaway data: trade durability for speed.
innodb-buffer-pool-size = 64M
innodb-log-file-size = 16M
innodb-flush-log-at-trx-commit = 2
sync-binlog = 0
EOF
        # read-only stops everyone without READ_ONLY ADMIN (so: app) from
        # writing, while the replication threads still apply changes.
        if [ "$role" = replica ]; then echo "read-only = ON"; fi
    } >"$dir/my.cnf"
}

# my_launch PORT: start mariadbd in the background, detached (own session,
# stdio away from our caller's pipes) so that it survives this script and a
# test harness waiting on our output doesn't wait for the server too. Not via
# mysqld_safe: it would restart a server that kill-node killed on purpose.
my_launch() {
    local dir
    dir=$(my_dir "$1")
    setsid "$MYSQLD" --defaults-file="$dir/my.cnf" </dev/null >>"$dir/stdout.log" 2>&1 &
    echo "$!"
}

# my_wait_ready PORT LAUNCHER_PID: wait until the server takes queries; fail
# fast if it died.
my_wait_ready() {
    local port="$1" launcher="$2" dir deadline=$((SECONDS + TIMEOUT))
    dir=$(my_dir "$port")
    until my_ready "$port"; do
        if ! pid_alive "$launcher" && ! my_pid_of_dir "$dir" >/dev/null; then
            show_log "$dir/error.log"
            show_log "$dir/stdout.log"
            die "MariaDB on port $port exited during startup"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            show_log "$dir/error.log"
            die "MariaDB on port $port does not accept connections after ${TIMEOUT}s"
        fi
        sleep 0.2
    done
}

my_start_dir() {
    local port="$1" launcher
    launcher=$(my_launch "$port")
    my_wait_ready "$port" "$launcher"
}

# my_stop_dir DIR SIG: SIGTERM = clean shutdown, SIGKILL = crash. Falls back
# to SIGKILL if a clean shutdown takes longer than the timeout.
my_stop_dir() {
    local dir="$1" sig="$2" pid
    pid=$(my_pid_of_dir "$dir") || return 0
    signal_pids CONT "$pid" # a hung server can't shut down
    signal_pids "$sig" "$pid"
    if ! wait_until "$TIMEOUT" pids_gone "$pid"; then
        log "mariadbd $pid ($dir) ignored SIG$sig for ${TIMEOUT}s; sending SIGKILL"
        signal_pids KILL "$pid"
        wait_until 10 pids_gone "$pid" || die "mariadbd $pid survived SIGKILL"
    fi
}

my_slave_field() {
    "$MY_CLIENT" --no-defaults --protocol=TCP -h 127.0.0.1 -P "$1" -u root \
        --connect-timeout=3 -e 'SHOW SLAVE STATUS\G' 2>/dev/null |
        awk -v f="$2" -F': ' '$1 ~ "^ *"f"$" {print $2; exit}'
}

my_probe_visible() {
    [ "$(my_q "$1" "SELECT count(*) FROM $APP_DB.$PROBE_TABLE" 2>/dev/null)" = 1 ]
}

# my_sync PRIMARY REPLICA...: wait until the replicas applied every GTID the
# primary has binlogged so far.
my_sync() {
    local primary="$1" pos r res
    shift
    pos=$(my_q "$primary" 'SELECT @@GLOBAL.gtid_binlog_pos')
    for r in "$@"; do
        res=$(my_q "$r" "SELECT MASTER_GTID_WAIT('$pos', $TIMEOUT)" 2>&1 || true)
        if [ "$res" != 0 ]; then
            "$MY_CLIENT" --no-defaults --protocol=TCP -h 127.0.0.1 -P "$r" -u root \
                --connect-timeout=3 -e 'SHOW SLAVE STATUS\G' >&2 || true
            show_log "$(my_dir "$r")/error.log"
            die "MariaDB replica $r did not reach GTID position '$pos' within ${TIMEOUT}s ($res)"
        fi
    done
}

my_up() {
    LOG_TAG=my
    local p0="$MY_PORT_BASE" p1=$((MY_PORT_BASE + 1)) p2=$((MY_PORT_BASE + 2)) p
    mkdir -p "$STATE/my"
    my_write_cnf "$p0" primary
    my_write_cnf "$p1" replica
    my_write_cnf "$p2" replica
    own mysql "$STATE/my"

    # "normal" root auth: root@localhost/127.0.0.1 with an empty password,
    # so root works over TCP too (and for non-root callers).
    log "mariadb-install-db (once; copied to the replicas)"
    local install_args=(--no-defaults --datadir="$(my_dir "$p0")/data"
        --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve
        --innodb-log-file-size=16M)
    if [ "$IS_ROOT" -eq 1 ]; then install_args+=(--user=mysql); fi
    if ! (cd / && "$MY_INSTALL_DB" "${install_args[@]}") >"$STATE/my/install-db.log" 2>&1; then
        show_log "$STATE/my/install-db.log"
        die "mariadb-install-db failed"
    fi
    # A copy of a freshly bootstrapped, never started datadir is a valid
    # datadir (MariaDB has no per-server UUID file), and much cheaper than
    # bootstrapping three times.
    for p in "$p1" "$p2"; do cp -a "$(my_dir "$p0")/data" "$(my_dir "$p")/data"; done

    log "starting primary on 127.0.0.1:$p0, replicas on $p1 $p2"
    local launchers=()
    for p in "$p0" "$p1" "$p2"; do launchers+=("$(my_launch "$p")"); done
    my_wait_ready "$p0" "${launchers[0]}"
    my_wait_ready "$p1" "${launchers[1]}"
    my_wait_ready "$p2" "${launchers[2]}"

    # Accounts are created on the primary only. Its binlog starts with them,
    # and replicas with an empty gtid_slave_pos replay the binlog from the
    # beginning, so every account and the database reach them through
    # replication.
    my_q "$p0" "CREATE USER '$REPL_USER'@'127.0.0.1' IDENTIFIED BY '$REPL_PASSWORD';
        GRANT REPLICATION SLAVE ON *.* TO '$REPL_USER'@'127.0.0.1'"

    log "attaching replicas (GTID, slave_pos)"
    for p in "$p1" "$p2"; do
        my_q "$p" "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$p0,
            MASTER_USER='$REPL_USER', MASTER_PASSWORD='$REPL_PASSWORD',
            MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1; START SLAVE"
    done

    # The app account may only touch its own database: no SUPER, no
    # READ_ONLY ADMIN, so a write that reaches a replica fails with
    # ER_OPTION_PREVENTS_STATEMENT (1290).
    my_q "$p0" "CREATE DATABASE $APP_DB CHARACTER SET utf8mb4;
        CREATE USER '$APP_USER'@'127.0.0.1' IDENTIFIED BY '$APP_PASSWORD';
        CREATE USER '$APP_USER'@'localhost' IDENTIFIED BY '$APP_PASSWORD';
        GRANT ALL PRIVILEGES ON $APP_DB.* TO '$APP_USER'@'127.0.0.1';
        GRANT ALL PRIVILEGES ON $APP_DB.* TO '$APP_USER'@'localhost'"

    log "checking replication"
    my_q "$p0" "CREATE TABLE $APP_DB.$PROBE_TABLE (id int PRIMARY KEY); INSERT INTO $APP_DB.$PROBE_TABLE VALUES (1)"
    for p in "$p1" "$p2"; do
        if ! wait_until "$TIMEOUT" my_probe_visible "$p"; then
            "$MY_CLIENT" --no-defaults --protocol=TCP -h 127.0.0.1 -P "$p" -u root \
                --connect-timeout=3 -e 'SHOW SLAVE STATUS\G' >&2 || true
            show_log "$(my_dir "$p")/error.log"
            die "probe row written on the primary never showed up on replica $p"
        fi
    done
    my_q "$p0" "DROP TABLE $APP_DB.$PROBE_TABLE"
    my_sync "$p0" "$p1" "$p2"
    for p in "$p1" "$p2"; do
        [ "$(my_q "$p" 'SELECT @@read_only')" = 1 ] || die "MariaDB replica $p is not read-only"
    done
    log "MariaDB ready: primary $p0, replicas $p1 $p2"
}

# ---------------------------------------------------------------------------
# Whole-cluster commands
# ---------------------------------------------------------------------------

# stray_pids: postgres/mariadbd processes whose command line points into the
# state dir but that we couldn't reach through a pid file (e.g. a pid file
# that was lost). Matching on our own state path keeps this narrow.
stray_pids() {
    local f p cmd exe
    # One grep over all command lines instead of one process per pid.
    for f in $(grep -lsF -- "$STATE/" /proc/[0-9]*/cmdline || true); do
        p="${f#/proc/}"
        p="${p%/cmdline}"
        cmd=$(pid_cmdline "$p")
        exe="${cmd%% *}"
        case "${exe##*/}" in postgres | postmaster | mariadbd | mysqld) ;; *) continue ;; esac
        pid_alive "$p" && echo "$p"
    done
    return 0
}

cmd_down() {
    if [ ! -e "$STATE" ]; then
        log "nothing to stop: $STATE does not exist"
        return 0
    fi
    [ -d "$STATE" ] || die "$STATE exists and is not a directory"
    # Never rm -rf a directory we didn't create.
    if [ ! -e "$STATE/$MARKER" ] && [ -n "$(ls -A "$STATE")" ]; then
        die "$STATE is not empty and has no $MARKER marker; refusing to delete it"
    fi
    find_binaries
    local d pid pids all_pids="" jobs=()
    # Stop all nodes in parallel; remember every pid for the reaping wait.
    for d in "$STATE"/pg/*/; do
        d="${d%/}"
        [ -f "$d/PG_VERSION" ] || continue
        pid=$(pg_pid_of_dir "$d") || continue
        all_pids+=" $pid $(pg_children "$pid")"
        log "stopping PostgreSQL in $d"
        pg_stop_dir "$d" immediate &
        jobs+=("$!")
    done
    for d in "$STATE"/my/*/; do
        d="${d%/}"
        [ -f "$d/my.cnf" ] || continue
        pid=$(my_pid_of_dir "$d") || continue
        all_pids+=" $pid"
        log "stopping MariaDB in $d"
        # The data is about to be deleted: no point in a clean shutdown.
        my_stop_dir "$d" KILL &
        jobs+=("$!")
    done
    for pid in "${jobs[@]}"; do wait "$pid" || true; done
    # Backstop for anything the pid files didn't lead us to (or that a failed
    # stop left behind).
    pids=$(stray_pids | tr '\n' ' ')
    if [ -n "${pids// /}" ]; then
        log "killing leftover server processes: $pids"
        all_pids+=" $pids"
        # shellcheck disable=SC2086
        signal_pids CONT $pids
        # shellcheck disable=SC2086
        signal_pids KILL $pids
        # shellcheck disable=SC2086
        wait_until "$TIMEOUT" pids_gone $pids || die "processes survived SIGKILL: $pids"
    fi
    # The servers are dead now, but until their reaper (PID 1, which can be
    # lazy) collects them they still show up in ps as <defunct>. Give it a
    # few seconds so that "down" really means gone; not an error if not.
    # shellcheck disable=SC2086
    [ -z "${all_pids// /}" ] || wait_until 5 pids_reaped $all_pids || true
    rm -rf "$STATE"
    log "cluster in $STATE is down"
}

write_env() {
    local f="$STATE/env" p
    local pg1=$((PG_PORT_BASE + 1)) pg2=$((PG_PORT_BASE + 2))
    local my1=$((MY_PORT_BASE + 1)) my2=$((MY_PORT_BASE + 2))
    # Values are left bare when they are plain (they all are unless the state
    # dir path is exotic) so that simple KEY=VALUE parsers can read the file
    # too; anything else is single-quoted for the shell.
    kv() {
        if [[ "$2" =~ ^[A-Za-z0-9_./:,@%+=-]*$ ]]; then
            printf 'export %s=%s\n' "$1" "$2"
        else
            printf "export %s='%s'\n" "$1" "${2//\'/\'\\\'\'}"
        fi
    }
    {
        echo "# rwpool test cluster, written by scripts/cluster.sh up on $(date -Is)"
        kv RWPOOL_CLUSTER_DIR "$STATE"
        kv RWPOOL_CLUSTER_SCRIPT "$SCRIPT_PATH"
        kv RWPOOL_DB_USER "$APP_USER"
        kv RWPOOL_DB_PASSWORD "$APP_PASSWORD"
        kv RWPOOL_DB_NAME "$APP_DB"
        echo "# PostgreSQL (admin: user postgres, trust auth)"
        kv RWPOOL_PG_PRIMARY "127.0.0.1:$PG_PORT_BASE"
        kv RWPOOL_PG_REPLICAS "127.0.0.1:$pg1,127.0.0.1:$pg2"
        kv RWPOOL_PG_PORTS "$PG_PORT_BASE,$pg1,$pg2"
        kv RWPOOL_PG_ADMIN_USER postgres
        kv RWPOOL_PG_BIN "$PG_BIN"
        kv RWPOOL_PG_SOCKET_DIR "$STATE/pg/run"
        for p in "$PG_PORT_BASE" "$pg1" "$pg2"; do
            kv "RWPOOL_PG_DATA_$p" "$(pg_data "$p")"
            kv "RWPOOL_PG_PIDFILE_$p" "$(pg_data "$p")/postmaster.pid"
            kv "RWPOOL_PG_LOG_$p" "$(pg_log "$p")"
        done
        echo "# MariaDB (admin: user root, empty password)"
        kv RWPOOL_MY_PRIMARY "127.0.0.1:$MY_PORT_BASE"
        kv RWPOOL_MY_REPLICAS "127.0.0.1:$my1,127.0.0.1:$my2"
        kv RWPOOL_MY_PORTS "$MY_PORT_BASE,$my1,$my2"
        kv RWPOOL_MY_ADMIN_USER root
        for p in "$MY_PORT_BASE" "$my1" "$my2"; do
            kv "RWPOOL_MY_CNF_$p" "$(my_dir "$p")/my.cnf"
            kv "RWPOOL_MY_DATA_$p" "$(my_dir "$p")/data"
            kv "RWPOOL_MY_PIDFILE_$p" "$(my_dir "$p")/mariadbd.pid"
            kv "RWPOOL_MY_SOCKET_$p" "$(my_dir "$p")/mariadbd.sock"
            kv "RWPOOL_MY_LOG_$p" "$(my_dir "$p")/error.log"
        done
    } >"$f.tmp"
    chmod 0644 "$f.tmp"
    mv "$f.tmp" "$f"
}

# reserve_ports PORT...: take the nodes' ports out of Linux's ephemeral
# range (32768-60999 here), so that a client socket can never be bound to a
# node's port while that node is down for a fault test and make its restart
# fail with "address in use". Root only; the setting is appended to what is
# there and harmless to leave behind. Without root it is skipped.
reserve_ports() {
    local f=/proc/sys/net/ipv4/ip_local_reserved_ports cur want
    [ "$IS_ROOT" -eq 1 ] && [ -w "$f" ] || return 0
    cur=$(cat "$f")
    want=$(printf '%s\n' "$@" | paste -sd, -)
    [ -n "$cur" ] && want="$cur,$want"
    echo "$want" >"$f" 2>/dev/null || log "note: could not reserve ports $* (ip_local_reserved_ports)"
}

cmd_up() {
    local t0
    t0=$(date +%s%N)
    PG_PORT_BASE="${RWPOOL_PG_PORT_BASE:-55432}"
    MY_PORT_BASE="${RWPOOL_MY_PORT_BASE:-55306}"
    if ! is_port "$PG_PORT_BASE" || ! is_port "$((PG_PORT_BASE + 2))"; then
        die "bad RWPOOL_PG_PORT_BASE=$PG_PORT_BASE"
    fi
    if ! is_port "$MY_PORT_BASE" || ! is_port "$((MY_PORT_BASE + 2))"; then
        die "bad RWPOOL_MY_PORT_BASE=$MY_PORT_BASE"
    fi
    local ports=("$PG_PORT_BASE" $((PG_PORT_BASE + 1)) $((PG_PORT_BASE + 2))
        "$MY_PORT_BASE" $((MY_PORT_BASE + 1)) $((MY_PORT_BASE + 2)))
    [ "$(printf '%s\n' "${ports[@]}" | sort -u | wc -l)" -eq 6 ] ||
        die "PostgreSQL and MariaDB port ranges overlap: ${ports[*]}"

    ensure_binaries
    reserve_ports "${ports[@]}"
    cmd_down
    local p
    for p in "${ports[@]}"; do
        if port_in_use "$p"; then
            die "127.0.0.1:$p is already in use (another cluster? see RWPOOL_PG_PORT_BASE / RWPOOL_MY_PORT_BASE)"
        fi
    done

    mkdir -p "$STATE"
    touch "$STATE/$MARKER"
    chmod 0755 "$STATE"
    log "state dir $STATE; PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}'), $("$MYSQLD" --version | awk '{print $3}')"

    # The two engines are independent: bring them up in parallel.
    local pg_pid my_pid rc=0
    pg_up &
    pg_pid=$!
    my_up &
    my_pid=$!
    wait "$pg_pid" || rc=1
    wait "$my_pid" || rc=1
    if [ "$rc" -ne 0 ]; then
        die "cluster up failed (servers that did start are still running; logs are under $STATE; '$0 down' cleans up)"
    fi
    write_env
    local ms=$((($(date +%s%N) - t0) / 1000000))
    log "cluster up in $((ms / 1000)).$(printf '%03d' $((ms % 1000)))s; env file: $STATE/env"
}

cmd_env() {
    [ -r "$STATE/env" ] || die "no cluster at $STATE (run '$0 up' first)"
    cat "$STATE/env"
}

# node_state PORT: down | hung | running
node_state() {
    local port="$1" pid
    if [ "$(node_kind "$port")" = pg ]; then
        pid=$(pg_pid_of_dir "$(pg_data "$port")") || {
            echo down
            return
        }
    else
        pid=$(my_pid_of_dir "$(my_dir "$port")") || {
            echo down
            return
        }
    fi
    if pid_stopped "$pid"; then echo hung; else echo running; fi
}

cmd_status() {
    load_env
    local port kind role state reach detail bad=0 list
    printf '%-8s %-6s %-8s %-8s %-11s %s\n' ENGINE PORT ROLE PROCESS CONNECT REPLICATION
    list="$RWPOOL_PG_PORTS,$RWPOOL_MY_PORTS"
    for port in ${list//,/ }; do
        kind=$(node_kind "$port")
        role=$(node_role "$port")
        state=$(node_state "$port")
        reach=unreachable detail=-
        if [ "$state" = running ]; then
            if [ "$kind" = pg ]; then
                if pg_ready "$port"; then
                    reach=ok
                    if [ "$role" = replica ]; then
                        detail="recovery=$(pg_q "$port" postgres 'SELECT pg_is_in_recovery()' 2>/dev/null || echo '?')"
                        detail+=" walreceiver=$(pg_q "$port" postgres 'SELECT coalesce((SELECT status FROM pg_stat_wal_receiver), '\''none'\'')' 2>/dev/null || echo '?')"
                    else
                        detail="streaming_to=$(pg_q "$port" postgres "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" 2>/dev/null || echo '?')"
                    fi
                fi
            else
                if my_ready "$port"; then
                    reach=ok
                    if [ "$role" = replica ]; then
                        detail="io=$(my_slave_field "$port" Slave_IO_Running) sql=$(my_slave_field "$port" Slave_SQL_Running)"
                        detail+=" lag=$(my_slave_field "$port" Seconds_Behind_Master) read_only=$(my_q "$port" 'SELECT @@read_only' 2>/dev/null || echo '?')"
                    else
                        detail="replicas=$(my_q "$port" 'SELECT count(*) FROM information_schema.processlist WHERE command LIKE "Binlog Dump%"' 2>/dev/null || echo '?')"
                    fi
                fi
            fi
        fi
        [ "$reach" = ok ] || bad=1
        [ "$kind" = pg ] && kind=postgres || kind=mariadb
        printf '%-8s %-6s %-8s %-8s %-11s %s\n' "$kind" "$port" "$role" "$state" "$reach" "$detail"
    done
    return "$bad"
}

cmd_wait_sync() {
    load_env
    local primary="${RWPOOL_PG_PRIMARY##*:}" reps=() p
    for p in ${RWPOOL_PG_REPLICAS//,/ }; do
        p="${p##*:}"
        [ "$(node_state "$p")" = running ] && reps+=("$p")
    done
    [ "$(node_state "$primary")" = running ] && [ "${#reps[@]}" -gt 0 ] && pg_sync "$primary" "${reps[@]}"
    primary="${RWPOOL_MY_PRIMARY##*:}" reps=()
    for p in ${RWPOOL_MY_REPLICAS//,/ }; do
        p="${p##*:}"
        [ "$(node_state "$p")" = running ] && reps+=("$p")
    done
    [ "$(node_state "$primary")" = running ] && [ "${#reps[@]}" -gt 0 ] && my_sync "$primary" "${reps[@]}"
    return 0
}

# ---------------------------------------------------------------------------
# Per-node fault injection
# ---------------------------------------------------------------------------

node_arg() {
    if [ "$#" -ne 1 ] || ! is_port "$1"; then die "usage: $0 $CMD PORT"; fi
    load_env
    node_kind "$1" >/dev/null
}

cmd_stop_node() {
    node_arg "$@"
    local port="$1"
    if [ "$(node_state "$port")" = down ]; then
        log "node $port is not running"
        return 0
    fi
    if [ "$(node_kind "$port")" = pg ]; then
        pg_stop_dir "$(pg_data "$port")" fast
    else
        my_stop_dir "$(my_dir "$port")" TERM
    fi
    log "node $port stopped"
}

cmd_start_node() {
    node_arg "$@"
    local port="$1"
    case "$(node_state "$port")" in
    hung) die "node $port is running but hung (SIGSTOPped); use resume-node" ;;
    running)
        log "node $port is already running"
        return 0
        ;;
    esac
    port_in_use "$port" && die "127.0.0.1:$port is taken by a process that is not this node"
    if [ "$(node_kind "$port")" = pg ]; then
        pg_start_dir "$port"
    else
        my_start_dir "$port"
    fi
    log "node $port started"
}

cmd_kill_node() {
    node_arg "$@"
    local port="$1" pid
    if [ "$(node_kind "$port")" = pg ]; then
        pid=$(pg_pid_of_dir "$(pg_data "$port")") || {
            log "node $port is not running"
            return 0
        }
        pg_kill_pid "$pid"
    else
        pid=$(my_pid_of_dir "$(my_dir "$port")") || {
            log "node $port is not running"
            return 0
        }
        signal_pids KILL "$pid"
        wait_until "$TIMEOUT" pids_gone "$pid" || die "mariadbd $pid survived SIGKILL"
    fi
    log "node $port killed"
}

# node_pids PORT: the server's processes, main process first; empty if down.
node_pids() {
    local port="$1" pid
    if [ "$(node_kind "$port")" = pg ]; then
        pid=$(pg_pid_of_dir "$(pg_data "$port")") || return 0
        echo "$pid $(pg_children "$pid")"
    else
        pid=$(my_pid_of_dir "$(my_dir "$port")") || return 0
        echo "$pid" # one process; SIGSTOP stops all its threads
    fi
}

cmd_hang_node() {
    node_arg "$@"
    local port="$1" pids main
    pids=$(node_pids "$port")
    [ -n "$pids" ] || die "node $port is not running"
    main="${pids%% *}"
    # One kill stops the main process and every child listed: the hang is
    # all at once, as a frozen machine's would be. Stopping the postmaster
    # first and listing its children again after it (the way this used to
    # work) left the node half hung for as long as the listing took, which
    # on a loaded 2-core machine was over a second: new connections hung
    # while old ones still answered, a state no real fault produces. A
    # child forked between the listing and the kill is caught by the second
    # listing: the postmaster, stopped, forks no more.
    # shellcheck disable=SC2086
    signal_pids STOP $pids
    if [ "$(node_kind "$port")" = pg ]; then
        local late p
        late=$(pg_children "$main")
        # shellcheck disable=SC2086
        signal_pids STOP $late
        for p in $late; do
            case " $pids " in *" $p "*) ;; *) pids="$pids $p" ;; esac
        done
    fi
    log "node $port hung (SIGSTOP: $pids)"
}

cmd_resume_node() {
    node_arg "$@"
    local port="$1" pids main
    pids=$(node_pids "$port")
    [ -n "$pids" ] || die "node $port is not running"
    main="${pids%% *}"
    # Children first, postmaster last, so the postmaster never observes a
    # stopped child. (CONT is a no-op for processes that aren't stopped.)
    # shellcheck disable=SC2086
    signal_pids CONT ${pids#"$main"} "$main"
    log "node $port resumed"
}

cmd_delay_node() {
    if [ "$#" -ne 2 ] || ! is_port "$1" || ! [[ "$2" =~ ^[0-9]+$ ]]; then
        die "usage: $0 $CMD PORT SECONDS"
    fi
    load_env
    local port="$1" secs="$2"
    [ "$(node_role "$port")" = replica ] || die "node $port is not a replica"
    if [ "$(node_kind "$port")" = pg ]; then
        # A reload applies it: the startup process rereads the delay for
        # every commit record it waits on.
        pg_q "$port" postgres "ALTER SYSTEM SET recovery_min_apply_delay = '${secs}s'" >/dev/null
        pg_q "$port" postgres 'SELECT pg_reload_conf()' >/dev/null
        wait_until "$TIMEOUT" pg_delay_is "$port" "${secs}s" ||
            die "PostgreSQL $port did not take recovery_min_apply_delay=${secs}s"
    else
        # MariaDB changes MASTER_DELAY only while both replication threads
        # are stopped; with GTID positions they resume where they were.
        my_q "$port" "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = $secs; START SLAVE"
    fi
    log "node $port applies replication ${secs}s late"
}

cmd_promote_node() {
    node_arg "$@"
    local port="$1"
    [ "$(node_role "$port")" = replica ] || die "node $port is not a replica"
    if [ "$(node_kind "$port")" = pg ]; then
        [ "$(pg_q "$port" postgres 'SELECT pg_promote(true, 60)')" = t ] || die "pg_promote on $port failed"
    else
        my_q "$port" "STOP SLAVE; SET GLOBAL read_only = 0"
    fi
    log "node $port promoted (writable, replicating from nobody)"
}

cmd_rejoin_node() {
    node_arg "$@"
    local port="$1" primary
    if [ "$(node_kind "$port")" = pg ]; then
        primary="${RWPOOL_PG_PRIMARY##*:}"
        LOG_TAG=pg
        if [ "$(node_role "$port")" = primary ]; then
            [ "$(pg_q "$port" postgres 'SELECT pg_is_in_recovery()')" = f ] ||
                die "PostgreSQL $port, the original primary, is a standby: not supported"
            log "node $port is the primary"
            return 0
        fi
        pg_stop_dir "$(pg_data "$port")" fast
        rm -rf "$(pg_data "$port")"
        pg_up_standby "$primary" "$port"
        pg_sync "$primary" "$port"
    else
        LOG_TAG=my
        primary="${RWPOOL_MY_PRIMARY##*:}"
        if [ "$(node_role "$port")" = primary ]; then
            my_switchback "$port"
        else
            my_rejoin "$primary" "$port"
        fi
    fi
    log "node $port is where 'up' put it again"
}

# my_repl_sql TOPORT POS: the CHANGE MASTER that makes a node replicate
# from TOPORT starting at POS (slave_pos or current_pos).
my_repl_sql() {
    echo "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$1,
        MASTER_USER='$REPL_USER', MASTER_PASSWORD='$REPL_PASSWORD',
        MASTER_USE_GTID=$2, MASTER_CONNECT_RETRY=1"
}

# my_has_gtids STATE POS: true if the gtid_binlog_state STATE (the last
# GTID of every domain and server id) contains every GTID of POS.
my_has_gtids() {
    local g d s n x found
    for g in ${2//,/ }; do
        IFS=- read -r d s n <<<"$g"
        found=0
        for x in ${1//,/ }; do
            case "$x" in "$d-$s-"*) [ "${x##*-}" -ge "$n" ] && found=1 ;; esac
        done
        [ "$found" -eq 1 ] || return 1
    done
}

# my_covers PORT POS: PORT has applied or written everything up to POS
# (per domain; sequence numbers grow within a domain under
# gtid_strict_mode).
my_covers() {
    local cur g d n x ok
    cur=$(my_q "$1" 'SELECT @@GLOBAL.gtid_current_pos' 2>/dev/null) || return 1
    for g in ${2//,/ }; do
        d="${g%%-*}" n="${g##*-}" ok=0
        for x in ${cur//,/ }; do
            [ "${x%%-*}" = "$d" ] && [ "${x##*-}" -ge "$n" ] && ok=1
        done
        [ "$ok" -eq 1 ] || return 1
    done
}

my_replicating_from() {
    [ "$(my_slave_field "$1" Master_Port)" = "$2" ] &&
        [ "$(my_slave_field "$1" Slave_IO_Running)" = Yes ] &&
        [ "$(my_slave_field "$1" Slave_SQL_Running)" = Yes ]
}

# my_catch_up PORT FROM: wait until PORT has everything FROM binlogged.
my_catch_up() {
    local pos
    pos=$(my_q "$2" 'SELECT @@GLOBAL.gtid_binlog_pos')
    if ! wait_until "$TIMEOUT" my_covers "$1" "$pos"; then
        "$MY_CLIENT" --no-defaults --protocol=TCP -h 127.0.0.1 -P "$1" -u root \
            --connect-timeout=3 -e 'SHOW SLAVE STATUS\G' >&2 || true
        show_log "$(my_dir "$1")/error.log"
        die "MariaDB $1 did not reach $2's GTID position '$pos' within ${TIMEOUT}s"
    fi
}

# my_rejoin PRIMARY PORT: make replica PORT replicate from PRIMARY again.
my_rejoin() {
    local primary="$1" port="$2" cur have
    my_q "$port" "STOP SLAVE; SET GLOBAL read_only = 1"
    cur=$(my_q "$port" 'SELECT @@GLOBAL.gtid_current_pos')
    have=$(my_q "$primary" 'SELECT @@GLOBAL.gtid_binlog_state')
    # RESET MASTER forgets the GTIDs the node wrote while promoted: under
    # gtid_strict_mode they would make the primary's next ones out of order,
    # and stop replication. If the primary has them all (it replicated them,
    # e.g. after a switchover and a switchback), the node resumes after
    # them; if not, after what it last applied from the primary.
    my_q "$port" "RESET MASTER"
    if [ -n "$cur" ] && my_has_gtids "$have" "$cur"; then
        my_q "$port" "SET GLOBAL gtid_slave_pos = '$cur'"
    elif ! my_has_gtids "$have" "$(my_q "$port" 'SELECT @@GLOBAL.gtid_slave_pos')"; then
        # It last applied from another node (re-pointed to a promoted one
        # whose writes the primary never got): the primary could not
        # resume it there. Its writes are lost to the primary anyway; it
        # resumes at the primary's position (a test's switchover leaves the
        # primary read-only, with nothing the node lacks).
        log "node $port applied GTIDs the primary never had; resuming at the primary's position"
        my_q "$port" "SET GLOBAL gtid_slave_pos = '$(my_q "$primary" 'SELECT @@GLOBAL.gtid_binlog_pos')'"
    fi
    my_q "$port" "$(my_repl_sql "$primary" slave_pos); START SLAVE"
    wait_until "$TIMEOUT" my_replicating_from "$port" "$primary" ||
        die "MariaDB $port does not replicate from $primary: $(my_slave_field "$port" Last_IO_Error) $(my_slave_field "$port" Last_SQL_Error)"
}

# my_switchback PORT: the original primary, re-pointed to a promoted node,
# takes over again: that node stops taking writes, PORT catches up with it
# and becomes writable.
my_switchback() {
    local port="$1" from
    from=$(my_slave_field "$port" Master_Port)
    if [ -n "$from" ] && [ "$(node_state "$from")" = running ]; then
        my_q "$from" "SET GLOBAL read_only = 1"
        my_catch_up "$port" "$from"
    fi
    # gtid_slave_pos too: `up` left the primary with none.
    my_q "$port" "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL gtid_slave_pos = ''; SET GLOBAL read_only = 0"
}

cmd_repoint_node() {
    if [ "$#" -ne 2 ] || ! is_port "$1" || ! is_port "$2" || [ "$1" = "$2" ]; then
        die "usage: $0 $CMD PORT TOPORT"
    fi
    load_env
    local port="$1" to="$2"
    [ "$(node_kind "$port")" = "$(node_kind "$to")" ] || die "$port and $to are not of one engine"
    [ "$(node_state "$to")" = running ] || die "node $to is not running"
    if [ "$(node_kind "$port")" = pg ]; then
        LOG_TAG=pg
        pg_repoint "$port" "$to"
    else
        LOG_TAG=my
        # read_only first: a node that replicates takes no writes of its
        # own (a former primary may still be writable).
        my_q "$port" "SET GLOBAL read_only = 1; STOP SLAVE; $(my_repl_sql "$to" current_pos); START SLAVE"
        wait_until "$TIMEOUT" my_replicating_from "$port" "$to" ||
            die "MariaDB $port does not replicate from $to: $(my_slave_field "$port" Last_IO_Error) $(my_slave_field "$port" Last_SQL_Error)"
        my_catch_up "$port" "$to"
    fi
    log "node $port replicates from $to"
}

# pg_timeline PORT: the timeline the server writes (a primary) or last
# received or restarted on (a standby).
pg_timeline() {
    pg_q "$1" postgres "SELECT CASE WHEN pg_is_in_recovery() THEN
        COALESCE((SELECT received_tli FROM pg_stat_wal_receiver WHERE received_tli > 0),
                 (SELECT timeline_id FROM pg_control_checkpoint()))
        ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int END"
}

# pg_can_follow PORT TOPORT: standby PORT can switch to TOPORT's timeline:
# it is on it already, or has not received WAL past the point where
# TOPORT's timeline forked off PORT's.
pg_can_follow() {
    local port="$1" to="$2" tl totl fork
    tl=$(pg_timeline "$port")
    totl=$(pg_timeline "$to")
    [ "$tl" -le "$totl" ] || return 1
    [ "$tl" -lt "$totl" ] || return 0
    # TOPORT's history file: "parentTLI<TAB>switchpoint<TAB>reason" lines.
    fork=$(pg_q "$to" postgres "SELECT split_part(l, E'\t', 2)
        FROM regexp_split_to_table(pg_read_file('pg_wal/' || lpad(upper(to_hex($totl)), 8, '0') || '.history'), E'\n') l
        WHERE split_part(l, E'\t', 1) = '$tl'") || return 1
    [ -n "$fork" ] || return 1
    [ "$(pg_q "$port" postgres "SELECT GREATEST(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()) <= '$fork'::pg_lsn")" = t ]
}

# pg_streams_from PORT TOPORT: PORT's WAL receiver streams from TOPORT.
pg_streams_from() {
    [ "$(pg_q "$1" postgres "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming' AND sender_port = $2" 2>/dev/null)" = 1 ]
}

pg_repoint() {
    local port="$1" to="$2" slot
    [ "$(node_state "$port")" = running ] || die "node $port is not running"
    [ "$(pg_q "$port" postgres 'SELECT pg_is_in_recovery()')" = t ] ||
        die "PostgreSQL $port is not a standby (a former primary needs pg_rewind or a new base backup)"
    # The standby streams through its slot (primary_slot_name, set by
    # pg_basebackup -R -S): TOPORT must have one of that name, or it
    # refuses the connection. Slots are not copied by base backups, so a
    # promoted standby has none of the others'.
    slot=$(pg_q "$port" postgres 'SHOW primary_slot_name')
    if [ -n "$slot" ]; then
        pg_q "$to" postgres "SELECT pg_create_physical_replication_slot('$slot', true)
            WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = '$slot')" >/dev/null
    fi
    if ! pg_can_follow "$port" "$to"; then
        log "standby $port replayed past the point where $to's timeline forked off: a new base backup from $to"
        pg_stop_dir "$(pg_data "$port")" fast
        rm -rf "$(pg_data "$port")"
        pg_up_standby "$to" "$port"
    else
        pg_q "$port" postgres "ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=$to user=postgres application_name=rwpool-pg-$port'" >/dev/null
        pg_q "$port" postgres 'SELECT pg_reload_conf()' >/dev/null
    fi
    if ! wait_until "$TIMEOUT" pg_streams_from "$port" "$to"; then
        show_log "$(pg_log "$port")"
        die "PostgreSQL $port does not stream from $to within ${TIMEOUT}s"
    fi
    # (Behind a cascading standby there is no current WAL position to wait for.)
    [ "$(pg_q "$to" postgres 'SELECT pg_is_in_recovery()')" = t ] || pg_sync "$to" "$port"
}

cmd_set_read_only() {
    if [ "$#" -ne 2 ] || ! is_port "$1" || ! [[ "$2" =~ ^(on|off)$ ]]; then
        die "usage: $0 $CMD PORT on|off"
    fi
    load_env
    local port="$1" v=0
    [ "$2" = on ] && v=1
    if [ "$(node_kind "$port")" = pg ]; then
        pg_q "$port" postgres "ALTER SYSTEM SET default_transaction_read_only = $2" >/dev/null
        pg_q "$port" postgres 'SELECT pg_reload_conf()' >/dev/null
    else
        my_q "$port" "SET GLOBAL read_only = $v"
    fi
    log "node $port read-only: $2"
}

pg_delay_is() {
    local got
    got=$(pg_q "$1" postgres 'SHOW recovery_min_apply_delay' 2>/dev/null) || return 1
    [ "$got" = "$2" ] || { [ "$2" = 0s ] && [ "$got" = 0 ]; }
}

# ---------------------------------------------------------------------------

usage() {
    sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$SCRIPT_PATH" >&2
    exit 2
}

main() {
    CMD="${1:-}"
    if [ "$#" -gt 0 ]; then shift; fi
    case "$CMD" in
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    status) cmd_status "$@" ;;
    env) cmd_env "$@" ;;
    wait-sync) cmd_wait_sync "$@" ;;
    stop-node) cmd_stop_node "$@" ;;
    start-node) cmd_start_node "$@" ;;
    kill-node) cmd_kill_node "$@" ;;
    hang-node) cmd_hang_node "$@" ;;
    resume-node) cmd_resume_node "$@" ;;
    delay-node) cmd_delay_node "$@" ;;
    promote-node) cmd_promote_node "$@" ;;
    rejoin-node) cmd_rejoin_node "$@" ;;
    repoint-node) cmd_repoint_node "$@" ;;
    set-read-only) cmd_set_read_only "$@" ;;
    reserve-ports) reserve_ports "$@" ;;
    -h | --help | help | "") usage ;;
    *)
        log "unknown command: $CMD"
        usage
        ;;
    esac
}

# Everything above only defines things. This line is parsed in one go before
# it runs, so editing the file while an instance runs (a long `up`, or a test
# exec-ing a node command) can't derail that instance.
main "$@"; exit "$?"

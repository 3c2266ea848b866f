#!/usr/bin/env bash
# scripts/test.sh: the project's one test command. Starts the replicated
# PostgreSQL + MariaDB test cluster (scripts/cluster.sh), runs go vet and the
# tests against it with the race detector, and tears the cluster down again.
#
# Usage:
#   ./scripts/test.sh                       full run (what CI does)
#   ./scripts/test.sh [GO TEST ARGS...]     focused run
#
# Full run (no arguments): first, before the cluster starts,
# scripts/check-modules.sh (a second: no go.mod may have a replace
# directive or require a sibling module at a placeholder or pseudo-version,
# and go.work's go line must cover every module's; see RELEASING.md). Then,
# for every Go module in the repo, i.e. every
# directory with a go.mod (the root module first; .git, .cluster, vendor and
# testdata dirs are skipped), run in that directory:
#     go vet ./...
#     go test -race -count=1 -p 1 -timeout 25m ./...
# Every module is tried even if an earlier one fails; the exit status is
# non-zero if any step failed.
#
# Focused run (any arguments): the arguments replace the package list and
# are appended after the default flags, in the current directory only:
#     go vet ./...
#     go test -race -count=1 -p 1 -timeout 25m ARGS...
# So name the packages yourself, e.g.
#     ./scripts/test.sh -run TestFailover ./routing/
#     ./scripts/test.sh -v ./...
#     (cd examples && ../scripts/test.sh ./...)     a nested module
# Later flags win, so ARGS can override the defaults: -count=3,
# -timeout=5m, -race=false. Without a package argument go test tests only the
# package in the current directory.
#
# Environment:
#   RWPOOL_KEEP_CLUSTER=1   leave the cluster running afterwards (state and
#                           env file in $RWPOOL_CLUSTER_DIR, see cluster.sh)
#   RWPOOL_REUSE_CLUSTER=1  use an already running cluster if `cluster.sh
#                           status` says it is healthy (and leave it running);
#                           handy with RWPOOL_KEEP_CLUSTER=1 for quick reruns
#   RWPOOL_BACKENDS=a,b     the integration tests' backends (default:
#                           postgres, pgx, mariadb; the PgBouncer ones are
#                           pgbouncer_tx, pgbouncer_tx_pgx, pgbouncer_session,
#                           see internal/testcluster). A full run sets it
#                           itself for the root package's pass through
#                           PgBouncer (scripts/pgbouncer.sh, started and
#                           stopped here)
#   RWPOOL_SKIP_VET=1       don't run go vet
#   RWPOOL_FUZZTIME=100000x executions (or a time) per fuzz target in a full
#                           run (0: none)
#   (Debian's chromium is installed with apt-get when missing and this runs
#   as root: the demo report's rendering test uses it; so are pgpool2 and
#   haproxy, which the bench's proxy test runs via scripts/proxies.sh,
#   torn down again at the end.)
#   RWPOOL_CLUSTER_DIR, RWPOOL_PG_PORT_BASE, RWPOOL_MY_PORT_BASE,
#   RWPOOL_READY_TIMEOUT    passed on to scripts/cluster.sh
# CI=true is expected to be set by CI itself (tests then fail instead of
# skipping when the cluster is missing); this script doesn't set it.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLUSTER="$ROOT/scripts/cluster.sh"
PROXIES="$ROOT/scripts/proxies.sh"
PGBOUNCER="$ROOT/scripts/pgbouncer.sh"
PATRONI="$ROOT/scripts/patroni.sh"
# The root package's Patroni pass (integration_patroni_test.go), on the
# Patroni-managed cluster of scripts/patroni.sh, started for that pass only:
# its agents and etcd cost a few percent of a core while idle, which the
# other passes' latency bounds need not carry. The default pass skips these
# tests (without that cluster they would fail under CI=true).
PATRONI_RUN='^TestPatroni'
# The root package's second pass, through a PgBouncer in front of each
# PostgreSQL node (scripts/pgbouncer.sh; backends in internal/testcluster):
# every integration, fault and chaos test through transaction pooling with
# lib/pq, and the routing, consistency, kill and promotion tests through
# transaction pooling with pgx and through session pooling with lib/pq.
# The chaos test runs 20 s there instead of 60 s; the subset keeps the
# suite within its budget (about 5 minutes for both passes).
POOLED_FULL_BACKENDS=pgbouncer_tx
POOLED_FULL_RUN='^(TestIntegration|TestFault|TestChaos)'
# Left out there: the tests of rwpool's latency machinery (adaptive
# balancing, hedging, latency histograms, a flapping node), which act on
# forwarders and hangs in front of the servers and measure rwpool, not the
# pooler; the default pass runs them.
POOLED_FULL_SKIP='^(TestIntegrationAdaptive|TestIntegrationSlowReplicaLatency|TestFaultHangReplicaHedged|TestFaultFlappingReplica)'
POOLED_SUBSET_BACKENDS=pgbouncer_tx_pgx,pgbouncer_session
POOLED_SUBSET_RUN='^(TestIntegrationReadsOnReplicasWritesOnPrimary|TestIntegrationTransactionsOnPrimary|TestIntegrationReadYourWrites|TestIntegrationSessionPinning|TestFaultKillReplica|TestFaultKillPrimary|TestIntegrationFollowPromotion)$'
# -p 1: one test binary at a time. The root package's fault and chaos
# tests assert latency bounds (fail fast under 1 ms, p99 under 100 ms) on a
# 2-core machine; another package's race-enabled tests running beside them
# would measure the run queue instead of rwpool.
GO_TEST_FLAGS=(-race -count=1 -p 1 -timeout 25m)

OWN_CLUSTER=1

log() { printf '[test %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    # The bench's proxies (Pgpool-II, HAProxy) in front of the cluster: the
    # command module's tests stop them themselves; this catches a test that
    # died first. Before the cluster: they hold connections to it.
    if [ "${RWPOOL_KEEP_CLUSTER:-0}" != 1 ]; then
        "$PROXIES" down || log "WARNING: proxies teardown failed"
        "$PGBOUNCER" down || log "WARNING: PgBouncer teardown failed"
        "$PATRONI" down || log "WARNING: Patroni cluster teardown failed"
    fi
    if [ "$OWN_CLUSTER" -eq 1 ]; then
        if [ "${RWPOOL_KEEP_CLUSTER:-0}" = 1 ]; then
            log "RWPOOL_KEEP_CLUSTER=1: cluster left running; env: $RWPOOL_CLUSTER_DIR/env; stop it with $CLUSTER down"
        else
            "$CLUSTER" down || log "WARNING: cluster teardown failed"
        fi
    fi
    exit "$rc"
}

FAILED=()

# step DIR NAME CMD...: run CMD in DIR, record a failure instead of stopping.
step() {
    local dir="$1" name="$2"
    shift 2
    local where="${dir/#"$ROOT"/.}"
    log "$name in $where: $*"
    if ! (cd "$dir" && "$@"); then
        FAILED+=("'$name' in $where")
    fi
}

# go_modules: directories holding a go.mod, root module first, relative to
# $ROOT ("." for the root).
go_modules() {
    (cd "$ROOT" &&
        find . \( -name .git -o -name .cluster -o -name vendor -o -name testdata \) -prune -o \
            -name go.mod -type f -printf '%h\n' | sort |
        awk '$0 == "." {print; next} {rest[++n] = $0} END {for (i = 1; i <= n; i++) print rest[i]}')
}

# fuzz_all runs every fuzz target of the root module for a bounded number
# of executions (RWPOOL_FUZZTIME, default 100000x each; 0 skips), after the
# seed corpora already ran as ordinary tests. A crasher fails the run and
# is written to the package's testdata/fuzz/, where it becomes a
# regression test. A count, not a duration: with a duration, Go's fuzzing
# coordinator can end a run whose workers were starved of CPU (the
# cluster shares the cores) with a bare "context deadline exceeded" and no
# crasher (golang/go#75804, unfixed in Go 1.26; a CI run failed FuzzCache
# so); -timeout still bounds each target. 100000, not the 300000 of
# before: the eight targets took 3 min of a 32-min CI run at 300000 (and
# FuzzRedact, which redacts, parses and formats five DSN forms per input,
# once took 182 s alone, against its 3-min timeout); a longer fuzzing
# session is RWPOOL_FUZZTIME=10m on a quiet machine.
fuzz_all() {
    local t="${RWPOOL_FUZZTIME:-100000x}" pkg fn
    [ "$t" = 0 ] && return 0
    while read -r pkg fn; do
        step "$ROOT" "fuzz $fn" go test -run '^$' -fuzz "^$fn\$" -fuzztime "$t" -timeout 5m "$pkg"
    done < <(cd "$ROOT" && grep -rlE '^func Fuzz[A-Za-z0-9_]+\(' --include '*_test.go' . |
        while read -r f; do
            grep -oE '^func Fuzz[A-Za-z0-9_]+' "$f" | sed 's/^func //' |
                while read -r fn; do echo "./$(dirname "${f#./}") $fn"; done
        done | grep -v '^\./\(examples\|cmd\|metrics\)/' | sort -u)
}

# ensure_chromium installs Debian's chromium when it is missing and we are
# root with apt-get, as cluster.sh does for the database servers: the
# command module's TestDemoReport renders the demo's HTML report in it
# (and fails under CI=true without it). A failed install is only logged:
# that test then says what is missing.
ensure_chromium() {
    command -v chromium >/dev/null 2>&1 && return 0
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        log "chromium missing (not root or no apt-get): install Debian's chromium package for the demo report's rendering test"
        return 0
    fi
    log "chromium missing; installing it via apt-get"
    (export DEBIAN_FRONTEND=noninteractive && apt-get update -q && apt-get install -y -q chromium) ||
        log "WARNING: installing chromium failed"
}

# ensure_proxies installs Debian's pgpool2 and haproxy when missing, as
# ensure_chromium does: the command module's TestBenchProxiesSmoke runs
# them in front of the cluster (and fails under CI=true without them).
ensure_proxies() {
    { command -v pgpool || [ -x /usr/sbin/pgpool ]; } >/dev/null 2>&1 &&
        { command -v haproxy || [ -x /usr/sbin/haproxy ]; } >/dev/null 2>&1 && return 0
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        log "pgpool or haproxy missing (not root or no apt-get): install Debian's pgpool2 and haproxy packages for the bench's proxy tests"
        return 0
    fi
    log "pgpool or haproxy missing; installing pgpool2 and haproxy via apt-get"
    (export DEBIAN_FRONTEND=noninteractive && apt-get update -q && apt-get install -y -q pgpool2 haproxy) ||
        log "WARNING: installing pgpool2 and haproxy failed"
}

# patroni_pass ARGS...: start the Patroni cluster, run go test ARGS against
# it, and stop it again (the EXIT trap does too, should this be cut short).
patroni_pass() {
    local rc=0
    "$PATRONI" up || return 1
    # shellcheck disable=SC1091
    (. "${RWPOOL_PATRONI_DIR:-/tmp/rwpool-patroni}/env" && go test "$@") || rc=$?
    "$PATRONI" down || log "WARNING: Patroni cluster teardown failed"
    return "$rc"
}

main() {
    if [ -d /usr/local/go/bin ]; then PATH="/usr/local/go/bin:$PATH"; fi
    export PATH
    command -v go >/dev/null 2>&1 || {
        log "ERROR: go not found on PATH (looked in /usr/local/go/bin too)"
        exit 1
    }
    export RWPOOL_CLUSTER_DIR="${RWPOOL_CLUSTER_DIR:-/tmp/rwpool-cluster}"

    # --- module files: fast, and worth knowing before a long run ---
    if [ "$#" -eq 0 ]; then
        step "$ROOT" "check modules" "$ROOT/scripts/check-modules.sh"
    fi

    ensure_chromium
    ensure_proxies

    # --- cluster ---
    # The EXIT trap tears the cluster down whatever happens; INT/TERM go
    # through `exit` so that it runs for them too.
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    if [ "${RWPOOL_REUSE_CLUSTER:-0}" = 1 ] && "$CLUSTER" status >/dev/null 2>&1; then
        log "RWPOOL_REUSE_CLUSTER=1: using the running cluster in $RWPOOL_CLUSTER_DIR"
        OWN_CLUSTER=0
    else
        "$CLUSTER" up
    fi
    # shellcheck disable=SC1091
    . "$RWPOOL_CLUSTER_DIR/env"
    export RWPOOL_REPORT_DIR="$RWPOOL_CLUSTER_DIR/reports"
    # PgBouncers in front of the PostgreSQL nodes, for the tests through
    # poolers. Without them those tests skip, or fail under CI=true.
    if ! { [ "${RWPOOL_REUSE_CLUSTER:-0}" = 1 ] && "$PGBOUNCER" status >/dev/null 2>&1; }; then
        "$PGBOUNCER" up || log "WARNING: PgBouncers did not start; the tests through them will say so"
    fi
    local pgb_env="${RWPOOL_PGBOUNCER_DIR:-$RWPOOL_CLUSTER_DIR-pgbouncer}/env"
    # shellcheck disable=SC1090
    if [ -r "$pgb_env" ]; then . "$pgb_env"; fi

    # --- go vet / go test ---
    local m dir mods
    if [ "$#" -eq 0 ]; then
        mapfile -t mods < <(go_modules)
        for m in "${mods[@]}"; do
            dir="$ROOT/${m#./}"
            dir="${dir%/.}"
            if [ "${RWPOOL_SKIP_VET:-0}" != 1 ]; then step "$dir" "go vet" go vet ./...; fi
            step "$dir" "go test" go test "${GO_TEST_FLAGS[@]}" -skip "$PATRONI_RUN" ./...
            if [ "$m" = . ]; then
                step "$dir" "go test through PgBouncer (lib/pq, transaction mode)" env RWPOOL_BACKENDS="$POOLED_FULL_BACKENDS" \
                    go test "${GO_TEST_FLAGS[@]}" -run "$POOLED_FULL_RUN" -skip "$POOLED_FULL_SKIP" . -rwpool.chaos=20s
                step "$dir" "go test through PgBouncer (pgx, and session mode)" env RWPOOL_BACKENDS="$POOLED_SUBSET_BACKENDS" \
                    go test "${GO_TEST_FLAGS[@]}" -run "$POOLED_SUBSET_RUN" .
                step "$dir" "go test on Patroni" patroni_pass "${GO_TEST_FLAGS[@]}" -run "$PATRONI_RUN" .
            fi
        done
        fuzz_all
    else
        if [ "${RWPOOL_SKIP_VET:-0}" != 1 ]; then step "$PWD" "go vet" go vet ./...; fi
        case "$*" in
        *Patroni*) step "$PWD" "go test on Patroni" patroni_pass "${GO_TEST_FLAGS[@]}" "$@" ;;
        *) step "$PWD" "go test" go test "${GO_TEST_FLAGS[@]}" "$@" ;;
        esac
    fi

    # Reports the tests wrote (the chaos summary tables).
    local r
    for r in "$RWPOOL_REPORT_DIR"/*.txt; do
        [ -f "$r" ] && cat "$r"
    done

    if [ "${#FAILED[@]}" -gt 0 ]; then
        log "FAILED: ${FAILED[*]}"
        exit 1
    fi
    log "all passed"
}

# Parsed in one go before it runs: editing this file during a (long) run
# can't derail the run.
main "$@"; exit "$?"

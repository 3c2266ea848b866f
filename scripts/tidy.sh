#!/usr/bin/env bash
# scripts/tidy.sh: `go mod tidy` for every module of the repository, each on
# its own (GOWORK=off), as a user who `go get`s it will see it.
#
# Usage:
#   ./scripts/tidy.sh              tidy every module (root first)
#   ./scripts/tidy.sh DIR...       tidy only these module directories
#
# Why not plain `go mod tidy`, or `go work sync`: the sub-modules
# (cmd/rwpool, examples, metrics/otel, metrics/prometheus) require the
# rwpool module at a release version (see RELEASING.md), and while that
# version is not yet on the module proxy, `go mod tidy` cannot read it and
# fails. `go work sync` does not help either: it pushes the versions of the
# whole workspace's build list into every module, so the driver would
# inherit the go line and dependency versions of the heaviest module in
# the workspace (go-mysql-server, OpenTelemetry, ...).
#
# So for a module whose rwpool requirement cannot be found on the proxy,
# this script adds a replace of exactly that version by this checkout,
# tidies, and removes the replace again (also when the tidy fails). The
# requirement itself stays at the release version; go.sum then records
# the checksums of rwpool's own dependencies, but none for rwpool itself.
# Once the version is published, a plain run (which then finds it) records
# its checksum too: do that in the release procedure, after tagging the
# root module.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RWPOOL=github.com/rwpool/rwpool

if [ -d /usr/local/go/bin ]; then PATH="/usr/local/go/bin:$PATH"; fi

log() { printf '[tidy] %s\n' "$*" >&2; }

# modules: directories holding a go.mod, root module first.
modules() {
    (cd "$ROOT" &&
        find . \( -name .git -o -name .cluster -o -name vendor -o -name testdata \) -prune -o \
            -name go.mod -type f -printf '%h\n' | sort |
        awk '$0 == "." {print; next} {rest[++n] = $0} END {for (i = 1; i <= n; i++) print rest[i]}')
}

# required_rwpool prints the version of rwpool that the go.mod in the
# current directory requires, or nothing.
required_rwpool() {
    go mod edit -print | awk -v m="$RWPOOL" '
        /^require \($/ { inreq = 1; next }
        inreq && /^\)$/ { inreq = 0; next }
        inreq && $1 == m { print $2 }
        /^require / && $2 == m { print $3 }'
}

tidy_one() {
    local dir="$1" v rel
    cd "$dir"
    v="$(required_rwpool)"
    if [ -z "$v" ] || GOWORK=off go list -m "$RWPOOL@$v" >/dev/null 2>&1; then
        log "$dir: GOWORK=off go mod tidy"
        GOWORK=off go mod tidy
        return
    fi
    rel="$(realpath --relative-to=. "$ROOT")"
    log "$dir: $RWPOOL@$v is not published; tidying with a temporary replace by $rel"
    go mod edit -replace "$RWPOOL@$v=$rel"
    # shellcheck disable=SC2064 # expand $v now
    trap "go mod edit -dropreplace '$RWPOOL@$v'" EXIT
    GOWORK=off go mod tidy
}

main() {
    local dirs d
    if [ "$#" -gt 0 ]; then
        dirs=("$@")
    else
        mapfile -t dirs < <(modules)
        dirs=("${dirs[@]/#/$ROOT/}")
    fi
    for d in "${dirs[@]}"; do
        # A subshell per module: its own directory and its own EXIT trap.
        (tidy_one "$(cd "$d" && pwd)")
    done
    log "done; now check: ./scripts/check-modules.sh"
}

main "$@"

#!/usr/bin/env bash
# scripts/check-modules.sh: checks that every Go module of the repository
# can be fetched by a user as it is committed (see RELEASING.md). Fast (no
# network, no build); scripts/test.sh runs it first.
#
# Usage: ./scripts/check-modules.sh
#
# For every go.mod of the repository (root, cmd/rwpool, examples,
# metrics/otel, metrics/prometheus; examples is not published, but is held
# to the same rule, so that an example copied out of the repository
# builds):
#   - no replace directive: a published go.mod's replaces are ignored by the
#     modules that require it, and `go install …@version` refuses a module
#     that has one. Local development resolves the siblings through go.work.
#   - a requirement on a module of this repository (github.com/rwpool/rwpool
#     or one of its sub-modules) names a release, vX.Y.Z[-pre]: not a
#     pseudo-version (v0.0.0-00010101000000-000000000000 or any other
#     vX.Y.Z-…-yyyymmddhhmmss-abcdefabcdef) and not v0.0.0, which would only
#     resolve through a replace.
#   - its go line is at most go.work's (the workspace must be able to build
#     it), and, for a published module (all but examples), at most
#     OLDEST_GO below: users of the previous Go release must be able to
#     build it. A `go get -u` that pulls in a dependency needing a newer Go
#     raises the go line, and this check says so.
# Exit status 1 with one line per problem, 0 when all is well.

set -euo pipefail

# OLDEST_GO is the previous Go release, the oldest that every published
# module must build with. Raise it when a new Go is released, not before
# (see RELEASING.md, "Go versions").
OLDEST_GO=1.25.0

# UNPUBLISHED modules are never tagged, so no user builds them with an old
# Go; they still may not replace a sibling.
UNPUBLISHED=(examples)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -d /usr/local/go/bin ]; then PATH="/usr/local/go/bin:$PATH"; fi

PROBLEMS=0
problem() {
    printf 'check-modules: %s\n' "$*" >&2
    PROBLEMS=$((PROBLEMS + 1))
}

# go_line FILE: the version of FILE's go directive.
go_line() { awk '$1 == "go" {print $2; exit}' "$1"; }

# version_le A B: A <= B for release versions such as 1.25 or 1.25.0
# (sort -V puts "1.25" before "1.25.0", as Go orders them).
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$1" ]; }

is_unpublished() {
    local u
    for u in "${UNPUBLISHED[@]}"; do [ "$1" = "$u" ] && return 0; done
    return 1
}

main() {
    local work_go mods m dir mod_go line rel
    work_go="$(go_line "$ROOT/go.work")"
    [ -n "$work_go" ] || problem "go.work: no go line"

    mapfile -t mods < <(cd "$ROOT" &&
        find . \( -name .git -o -name .cluster -o -name vendor -o -name testdata \) -prune -o \
            -name go.mod -type f -printf '%h\n' | sort)
    [ "${#mods[@]}" -gt 0 ] || problem "no go.mod found under $ROOT"

    for m in "${mods[@]}"; do
        dir="$ROOT/${m#./}"
        dir="${dir%/.}"
        rel="${m#./}/go.mod"
        rel="${rel#./}"
        [ "$m" = . ] && rel=go.mod

        # go mod edit -print parses the file and prints it normalised: one
        # directive per line or one per line of a ( … ) block.
        local printed
        if ! printed="$(cd "$dir" && GOWORK=off go mod edit -print)"; then
            problem "$rel: cannot be parsed"
            continue
        fi

        while IFS= read -r line; do
            problem "$rel: replace directive: $line"
        done < <(awk '
            /^replace \($/ { inrep = 1; next }
            inrep && /^\)$/ { inrep = 0; next }
            inrep { sub(/^[ \t]+/, ""); print; next }
            /^replace / { sub(/^replace /, ""); print }' <<<"$printed")

        while read -r path version; do
            if [ "$version" = v0.0.0 ] || [[ "$version" =~ ^v0\.0\.0- ]] ||
                [[ "$version" =~ [0-9]{14}-[0-9a-f]{12}$ ]] ||
                ! [[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
                problem "$rel: requires $path $version: not a release (see RELEASING.md)"
            fi
        done < <(awk '
            /^require \($/ { inreq = 1; next }
            inreq && /^\)$/ { inreq = 0; next }
            inreq { sub(/^[ \t]+/, ""); print $1, $2; next }
            /^require / { print $2, $3 }' <<<"$printed" |
            awk '$1 == "github.com/rwpool/rwpool" || index($1, "github.com/rwpool/rwpool/") == 1')

        mod_go="$(go_line "$dir/go.mod")"
        if [ -z "$mod_go" ]; then
            problem "$rel: no go line"
        else
            if [ -n "$work_go" ] && ! version_le "$mod_go" "$work_go"; then
                problem "$rel: go $mod_go is newer than go.work's go $work_go"
            fi
            if ! is_unpublished "${m#./}" && ! version_le "$mod_go" "$OLDEST_GO"; then
                problem "$rel: go $mod_go is newer than OLDEST_GO $OLDEST_GO: users of the previous Go release could not build it"
            fi
        fi
    done

    if [ "$PROBLEMS" -gt 0 ]; then
        printf 'check-modules: %d problem(s); see RELEASING.md\n' "$PROBLEMS" >&2
        exit 1
    fi
    printf 'check-modules: %d modules ok\n' "${#mods[@]}" >&2
}

main "$@"

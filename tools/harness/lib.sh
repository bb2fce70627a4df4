#!/usr/bin/env bash
# Shared helpers for the ensure-*.sh scripts: cache layout, stamps, locks, timing.
# Why: every tool is built once into the git-ignored cache and reused; a stamp of the
# pinned inputs tells a warm run to exit at once, a flock keeps parallel runs apart.
set -euo pipefail

RLSTREAM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export RLSTREAM_ROOT
# Default outside the clone, so a fresh clone on a reused machine (CI) builds warm.
CACHE="${RLSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rlstream}"
mkdir -p "$CACHE/bin" "$CACHE/stamps" "$CACHE/locks"
CACHE="$(cd "$CACHE" && pwd)"
export RLSTREAM_CACHE_DIR="$CACHE"
export GOMODCACHE="$CACHE/go/mod"
export GOCACHE="$CACHE/go/build"
export GOPATH="$CACHE/go/path"
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

now() { date +%s.%N; }
# timing LABEL START: print one timing line for a finished step.
timing() { awk -v a="$2" -v b="$(now)" -v l="$1" 'BEGIN{printf "[timing] %-28s %6.1fs\n", l, b-a}'; }

# stamp_hash STRING...: hash of the pinned inputs of a tool.
stamp_hash() { printf '%s\n' "$@" | sha256sum | cut -c1-16; }
stamp_ok() { [[ -f "$CACHE/stamps/$1" && "$(cat "$CACHE/stamps/$1")" == "$2" ]]; }
stamp_write() { echo "$2" > "$CACHE/stamps/$1.tmp" && mv "$CACHE/stamps/$1.tmp" "$CACHE/stamps/$1"; }

# with_lock NAME: take an exclusive lock on fd 9 for the rest of the script.
with_lock() { exec 9>"$CACHE/locks/$1.lock"; flock 9; }

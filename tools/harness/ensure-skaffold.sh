#!/usr/bin/env bash
# Build skaffold v2 from the Go module proxy through a wrapper module: `go install` refuses
# it because its go.mod has replace directives, so the wrapper copies them (all point at
# published versions). Used by the skaffold-render-vs-helm-template test.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SKAFFOLD_VERSION="${SKAFFOLD_VERSION:-v2.16.1}"
MOD=github.com/GoogleContainerTools/skaffold/v2
LDF="-s -w -X ${MOD}/pkg/skaffold/version.version=${SKAFFOLD_VERSION}"
h="$(stamp_hash skaffold "$SKAFFOLD_VERSION" "$LDF" 1)"
ok() { stamp_ok skaffold "$h" && "$CACHE/bin/skaffold" version >/dev/null 2>&1; }
if ok; then echo "[skaffold] cached: $("$CACHE/bin/skaffold" version)"; exit 0; fi
with_lock skaffold
ok && exit 0
t="$(now)"
d="$CACHE/skaffold-build"
rm -rf "$d" && mkdir -p "$d"
(
  cd "$d"
  go mod init local.invalid/skaffoldbin >/dev/null 2>&1
  go mod edit -require="${MOD}@${SKAFFOLD_VERSION}"
  gomod="$(go mod download -json "${MOD}@${SKAFFOLD_VERSION}" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
  # Copy its replace directives (single-line `replace a => b vX` form).
  args=()
  while read -r from to ver; do args+=("-replace=${from}=${to}@${ver}"); done < <(
    awk '$1 == "replace" && $3 == "=>" && NF == 5 {print $2, $4, $5}' "$gomod")
  (( ${#args[@]} )) && go mod edit "${args[@]}"
  echo "[skaffold] ${#args[@]} replaces copied"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s/cmd/skaffold"\n' "$MOD" > tools.go
  CGO_ENABLED=0 GOFLAGS="$GOFLAGS -mod=mod" go build -trimpath -ldflags "$LDF" \
    -o "$CACHE/bin/.skaffold.tmp" "${MOD}/cmd/skaffold"
)
mv "$CACHE/bin/.skaffold.tmp" "$CACHE/bin/skaffold"
stamp_write skaffold "$h"
echo "[skaffold] $("$CACHE/bin/skaffold" version)"
timing "build skaffold $SKAFFOLD_VERSION" "$t"

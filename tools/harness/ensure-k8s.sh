#!/usr/bin/env bash
# Build etcd and kube-apiserver from the Go module proxy (no Docker, no release tarballs).
# Why a wrapper module: `go install` refuses modules with replace directives and
# kubernetes pins its staging modules at a non-existent v0.0.0 (kubernetes#79384).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
K8S_VERSION="${K8S_VERSION:-v1.36.3}"
K8S_MINOR="$(echo "$K8S_VERSION" | cut -d. -f2)"
STAGING_VERSION="v0.${K8S_MINOR}.$(echo "$K8S_VERSION" | cut -d. -f3)"
BUILD_DATE="2026-01-01T00:00:00Z"
LDF="-s -w -X k8s.io/component-base/version.gitVersion=${K8S_VERSION} \
-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${K8S_MINOR} \
-X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=${BUILD_DATE} \
-X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION} \
-X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=${K8S_MINOR}"

build_etcd() {
  local h; h="$(stamp_hash etcd "$ETCD_VERSION" 2)"
  if stamp_ok etcd "$h" && "$CACHE/bin/etcd" --version >/dev/null 2>&1; then return 0; fi
  local t; t="$(now)"
  local d="$CACHE/etcd-build"
  rm -rf "$d" && mkdir -p "$d"
  (
    cd "$d"
    go mod init local.invalid/etcdbin >/dev/null 2>&1
    go mod edit -require="go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
    cat > tools.go <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
    CGO_ENABLED=0 GOFLAGS="$GOFLAGS -mod=mod" go build -trimpath -ldflags "-s -w" \
      -o "$CACHE/bin/.etcd.tmp" go.etcd.io/etcd/server/v3
  )
  mv "$CACHE/bin/.etcd.tmp" "$CACHE/bin/etcd"
  stamp_write etcd "$h"
  timing "build etcd $ETCD_VERSION" "$t"
}

build_apiserver() {
  local h; h="$(stamp_hash apiserver "$K8S_VERSION" "$STAGING_VERSION" "$LDF" 2)"
  if stamp_ok kube-apiserver "$h" && "$CACHE/bin/kube-apiserver" --version >/dev/null 2>&1; then
    return 0
  fi
  local t; t="$(now)"
  local d="$CACHE/k8s-build"
  rm -rf "$d" && mkdir -p "$d"
  (
    cd "$d"
    go mod init local.invalid/k8sbins >/dev/null 2>&1
    go mod edit -require="k8s.io/kubernetes@${K8S_VERSION}"
    local gomod
    gomod="$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
    # Derive the staging replace list from kubernetes' own go.mod (never hard-code it).
    local mods
    mods="$(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$gomod" | sort -u)"
    local args=()
    for m in $mods; do args+=("-replace=${m}=${m}@${STAGING_VERSION}"); done
    go mod edit "${args[@]}"
    echo "[k8s] $(echo "$mods" | wc -w) staging replaces at $STAGING_VERSION"
    cat > tools.go <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
    CGO_ENABLED=0 GOFLAGS="$GOFLAGS -mod=mod" go build -trimpath -ldflags "$LDF" \
      -o "$CACHE/bin/.kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  )
  mv "$CACHE/bin/.kube-apiserver.tmp" "$CACHE/bin/kube-apiserver"
  stamp_write kube-apiserver "$h"
  timing "build kube-apiserver $K8S_VERSION" "$t"
}

warm() {
  stamp_ok etcd "$(stamp_hash etcd "$ETCD_VERSION" 2)" && "$CACHE/bin/etcd" --version >/dev/null 2>&1 &&
    stamp_ok kube-apiserver "$(stamp_hash apiserver "$K8S_VERSION" "$STAGING_VERSION" "$LDF" 2)" &&
    "$CACHE/bin/kube-apiserver" --version >/dev/null 2>&1
}
if ! warm; then
  with_lock k8s  # another run may be building: wait for it, then re-check inside each step
  build_etcd &  # small; overlaps the long kube-apiserver link phases
  etcd_pid=$!
  build_apiserver
  wait "$etcd_pid"
fi
# sed, not head: head closes the pipe early and SIGPIPE + pipefail would fail the script.
"$CACHE/bin/etcd" --version | sed -n 1p
"$CACHE/bin/kube-apiserver" --version

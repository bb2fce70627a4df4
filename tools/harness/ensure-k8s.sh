#!/usr/bin/env bash
# Build etcd and kube-apiserver from the Go module proxy (no Docker, no release tarballs).
# Why a wrapper module: `go install` refuses modules with replace directives and
# kubernetes pins its staging modules at a non-existent v0.0.0 (kubernetes#79384).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

source "$(dirname "${BASH_SOURCE[0]}")/k8s-version.sh"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"

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
    k8s_wrapper_module
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

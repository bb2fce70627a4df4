#!/usr/bin/env bash
# Kubernetes version, ldflags and wrapper go.mod shared by ensure-k8s.sh and ensure-node.sh.
# Source after lib.sh.
K8S_VERSION="${K8S_VERSION:-v1.36.3}"
K8S_MINOR="$(echo "$K8S_VERSION" | cut -d. -f2)"
STAGING_VERSION="v0.${K8S_MINOR}.$(echo "$K8S_VERSION" | cut -d. -f3)"
BUILD_DATE="2026-01-01T00:00:00Z"
LDF="-s -w -X k8s.io/component-base/version.gitVersion=${K8S_VERSION} \
-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${K8S_MINOR} \
-X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=${BUILD_DATE} \
-X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION} \
-X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=${K8S_MINOR}"

# k8s_wrapper_module: in the current (empty) dir, write a go.mod requiring kubernetes with
# the staging replace list derived from kubernetes' own go.mod (never hard-coded).
k8s_wrapper_module() {
  go mod init local.invalid/k8sbins >/dev/null 2>&1
  go mod edit -require="k8s.io/kubernetes@${K8S_VERSION}"
  local gomod mods m args=()
  gomod="$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
  mods="$(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$gomod" | sort -u)"
  for m in $mods; do args+=("-replace=${m}=${m}@${STAGING_VERSION}"); done
  go mod edit "${args[@]}"
  echo "[k8s] $(echo "$mods" | wc -w) staging replaces at $STAGING_VERSION"
}

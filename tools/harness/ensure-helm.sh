#!/usr/bin/env bash
# Build Helm 3 with `go install` (its go.mod has no replace directives).
# Why the ldflags: without the k8s version vars .Capabilities.KubeVersion is v1.20.0 and
# charts with `kubeVersion: >=1.30` fail to template.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HELM_VERSION="${HELM_VERSION:-v3.21.4}"
K8S_MINOR="${K8S_MINOR:-36}"
LDF="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} \
-X helm.sh/helm/v3/internal/version.gitTreeState=clean \
-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${K8S_MINOR} \
-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${K8S_MINOR}"
h="$(stamp_hash helm "$HELM_VERSION" "$LDF" 1)"
if stamp_ok helm "$h" && "$CACHE/bin/helm" version --short >/dev/null 2>&1; then
  echo "[helm] cached: $("$CACHE/bin/helm" version --short)"
  exit 0
fi
with_lock helm
if stamp_ok helm "$h" && "$CACHE/bin/helm" version --short >/dev/null 2>&1; then exit 0; fi
t="$(now)"
tmpbin="$CACHE/go/helm-bin.tmp"
rm -rf "$tmpbin" && mkdir -p "$tmpbin"
CGO_ENABLED=0 GOBIN="$tmpbin" go install -trimpath -ldflags "$LDF" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
mv "$tmpbin/helm" "$CACHE/bin/helm"
stamp_write helm "$h"
echo "[helm] $("$CACHE/bin/helm" version --short)"
timing "build helm $HELM_VERSION" "$t"

#!/usr/bin/env bash
# Build kube-controller-manager, kube-scheduler, kubelet and kube-proxy from the Go module proxy,
# with the same wrapper-module technique and ldflags as kube-apiserver (ensure-k8s.sh).
# Why one `go build` for the three: they share most packages, so one invocation compiles
# each package once; the shared GOCACHE also reuses what the kube-apiserver build compiled.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/k8s-version.sh"

NODE_BINS=(kube-controller-manager kube-scheduler kubelet kube-proxy)

node_hash() { stamp_hash node "$K8S_VERSION" "$STAGING_VERSION" "$LDF" "${NODE_BINS[*]}" 1; }
node_warm() {
  stamp_ok k8s-node "$(node_hash)" || return 1
  local b; for b in "${NODE_BINS[@]}"; do "$CACHE/bin/$b" --version >/dev/null 2>&1 || return 1; done
}

build_node() {
  local t; t="$(now)"
  local d="$CACHE/k8s-node-build" out="$CACHE/bin/.node.tmp"
  rm -rf "$d" "$out" && mkdir -p "$d" "$out"
  (
    cd "$d"
    k8s_wrapper_module
    {
      printf '//go:build tools\n\npackage tools\n\nimport (\n'
      for b in "${NODE_BINS[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$b"; done
      printf ')\n'
    } > tools.go
    local pkgs=(); for b in "${NODE_BINS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
    CGO_ENABLED=0 GOFLAGS="$GOFLAGS -mod=mod" go build -trimpath -ldflags "$LDF" -o "$out/" "${pkgs[@]}"
  )
  local b; for b in "${NODE_BINS[@]}"; do mv "$out/$b" "$CACHE/bin/$b"; done
  rmdir "$out"
  stamp_write k8s-node "$(node_hash)"
  timing "build node bins $K8S_VERSION" "$t"
}

if ! node_warm; then
  with_lock k8s-node
  node_warm || build_node
fi
"$CACHE/bin/kubelet" --version

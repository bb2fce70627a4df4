#!/usr/bin/env bash
# Cache prometheus-operator's ServiceMonitor and PrometheusRule CRDs (the chart's optional
# monitoring objects are validated against them on the harness kube-apiserver). They ship in
# the root Go module (example/ has no go.mod), so `go mod download` through the configured
# GOPROXY fetches them; nothing else of the module is built.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PROMOP_VERSION="${PROMOP_VERSION:-v0.93.0}"
MOD=github.com/prometheus-operator/prometheus-operator
FILES=(monitoring.coreos.com_servicemonitors.yaml monitoring.coreos.com_prometheusrules.yaml)
out="$CACHE/promcrds"
h="$(stamp_hash promcrds "$PROMOP_VERSION" "${FILES[@]}" 1)"
ok() { stamp_ok promcrds "$h" && for f in "${FILES[@]}"; do [[ -s "$out/$f" ]] || return 1; done; }
if ok; then echo "[promcrds] cached: $PROMOP_VERSION"; exit 0; fi
with_lock promcrds
ok && exit 0
t="$(now)"
dir="$(go mod download -json "${MOD}@${PROMOP_VERSION}" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
mkdir -p "$out"
for f in "${FILES[@]}"; do
  install -m 0644 "$dir/example/prometheus-operator-crd/$f" "$out/.$f.tmp"
  mv "$out/.$f.tmp" "$out/$f"
done
stamp_write promcrds "$h"
echo "[promcrds] $PROMOP_VERSION -> $out"
timing "fetch promcrds $PROMOP_VERSION" "$t"

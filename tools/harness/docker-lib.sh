#!/usr/bin/env bash
# Docker engine for the harness (Debian's docker.io), run as root with its data and exec
# roots in the cache. Source after lib.sh.
# Why these flags: no registry and no bridge networking are needed (builds use --network
# host, test containers --network host or none), and iptables=false keeps the host's
# firewall untouched. BuildKit is not packaged in Debian: the legacy builder is used.
DOCKER_ROOT="$CACHE/docker"
DOCKER_RUN="$CACHE/run"
DOCKER_SOCK="$DOCKER_RUN/docker.sock"
export DOCKER_HOST="unix://$DOCKER_SOCK" DOCKER_BUILDKIT=0
DOCKERD_STARTED=""

docker_ok() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# docker_up: start dockerd unless one already answers on the cache socket.
docker_up() {
  command -v dockerd >/dev/null || { echo "no dockerd: apt-get install docker.io" >&2; return 1; }
  docker_ok && return 0
  mkdir -p "$DOCKER_ROOT" "$DOCKER_RUN"
  exec 8>"$CACHE/locks/dockerd.lock"; flock 8
  if ! docker_ok; then
    setsid dockerd --data-root "$DOCKER_ROOT" --exec-root "$DOCKER_RUN/docker" \
      --pidfile "$DOCKER_RUN/dockerd.pid" -H "$DOCKER_HOST" --iptables=false --ip6tables=false \
      --bridge=none --storage-driver overlay2 >>"$DOCKER_RUN/dockerd.log" 2>&1 < /dev/null &
    DOCKERD_STARTED=$!
    local i; for i in $(seq 1 100); do docker_ok && break; sleep 0.2; done
    docker_ok || { tail -20 "$DOCKER_RUN/dockerd.log" >&2; flock -u 8; return 1; }
  fi
  flock -u 8
}

# docker_down: stop the dockerd this script started (none if it reused a running one).
docker_down() {
  [[ -n "$DOCKERD_STARTED" ]] || return 0
  kill "$DOCKERD_STARTED" 2>/dev/null || true
  local i; for i in $(seq 1 50); do kill -0 "$DOCKERD_STARTED" 2>/dev/null || break; sleep 0.2; done
  DOCKERD_STARTED=""
}

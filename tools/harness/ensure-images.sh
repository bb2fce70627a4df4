#!/usr/bin/env bash
# Build the harness's container images with no registry: a Debian base made by debootstrap
# and `docker import`, the pod sandbox (pause) image, the services image (docker/Dockerfile)
# and the CPU trainer image (docker/Dockerfile.trainer-cpu), all with the legacy builder.
# Each image's tag is a content hash of its inputs, so a warm run only checks the tags.
# Writes $CACHE/images/images.env (BASE_IMAGE, PAUSE_IMAGE, RLSTREAM_IMAGE, TRAINER_IMAGE);
# the test cluster streams them into its containerd (`docker save | ctr import`) on demand.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/docker-lib.sh"
cd "$RLSTREAM_ROOT"

SUITE=bookworm
BASE_PKGS="python3,python3-venv,ca-certificates"
# The machine's own apt source (no mirror is named here): DEBIAN_MIRROR, else the first
# Debian archive apt itself is configured with.
MIRROR="${DEBIAN_MIRROR:-$(apt-get indextargets --format '$(REPO_URI)' 2>/dev/null \
  | grep -v -- '-security' | sort -u | head -1)}"
MIRROR="${MIRROR:-$(awk '/^URIs:/{print $2; exit} /^deb /{print $2; exit}' \
  /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null | head -1)}"
[[ -n "$MIRROR" ]] || { echo "[images] no Debian apt source configured: set DEBIAN_MIRROR" >&2; exit 1; }
IMG="$CACHE/images"
mkdir -p "$IMG"
trap docker_down EXIT

has_image() { docker image inspect "$1" >/dev/null 2>&1; }
files_hash() { # files_hash PATH...: hash of the files' names and contents (no caches)
  find "$@" -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | sort -z \
    | xargs -0 sha256sum | sha256sum | cut -c1-16
}

# The base trusts what this build host trusts: its extra CA certificates (a TLS-inspecting
# egress proxy's, say) and its pip.conf, so `pip install` in the image builds reaches PyPI.
EXTRA_CAS=(/usr/local/share/ca-certificates/*.crt)
[[ -e "${EXTRA_CAS[0]}" ]] || EXTRA_CAS=()
PIP_CONF=/etc/pip.conf
[[ -f "$PIP_CONF" ]] || PIP_CONF=""

base_image() {
  local trust; trust="$(cat "${EXTRA_CAS[@]}" $PIP_CONF /dev/null | sha256sum | cut -c1-16)"
  local tag; tag="local/rlstream-base:${SUITE}-$(stamp_hash "$SUITE" "$BASE_PKGS" minbase "$trust" 1)"
  if ! has_image "$tag"; then
    local t; t="$(now)" rootfs="$CACHE/rootfs.tmp"
    rm -rf "$rootfs"
    debootstrap --variant=minbase --include="$BASE_PKGS" "$SUITE" "$rootfs" "$MIRROR" \
      >"$IMG/debootstrap.log" 2>&1 || { tail -20 "$IMG/debootstrap.log" >&2; return 1; }
    if (( ${#EXTRA_CAS[@]} )); then
      cp "${EXTRA_CAS[@]}" "$rootfs/usr/local/share/ca-certificates/"
      chroot "$rootfs" update-ca-certificates >>"$IMG/debootstrap.log" 2>&1
    fi
    [[ -n "$PIP_CONF" ]] && cp "$PIP_CONF" "$rootfs/etc/pip.conf"
    tar -C "$rootfs" --exclude='./var/cache/apt/archives/*.deb' --exclude='./var/lib/apt/lists/*' \
      -c . | docker import -c 'CMD ["bash"]' - "$tag" >/dev/null
    rm -rf "$rootfs"
    timing "image base (debootstrap)" "$t" >&2
  fi
  echo "$tag"
}

pause_image() {
  local h tag; h="$(files_hash tools/harness/pause)"; tag="local/pause:$h"
  if ! has_image "$tag"; then
    local t d; t="$(now)"; d="$(mktemp -d)"
    (cd tools/harness/pause && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$d/pause" .)
    cp tools/harness/pause/Dockerfile "$d/"
    docker build -q -t "$tag" "$d" >/dev/null
    rm -rf "$d"
    timing "image pause" "$t" >&2
  fi
  echo "$tag"
}

# app_image NAME DOCKERFILE BASE [TARGET INPUT...]: build the repo-root context with BASE as
# the base image; with TARGET, only that stage, hashed over INPUT only (default: the sources).
app_image() {
  local name=$1 df=$2 base=$3 target=${4:-} h tag
  local inputs=(.dockerignore pyproject.toml README.md shared services)
  (( $# > 4 )) && inputs=("${@:5}")
  h="$(printf '%s\n' "$base" "$target" "$(files_hash "$df" "${inputs[@]}")" \
    | sha256sum | cut -c1-16)"
  tag="$name:h-$h"
  if ! has_image "$tag"; then
    local t; t="$(now)"
    docker build --network host --build-arg "BASE=$base" ${target:+--target "$target"} \
      -f "$df" -t "$tag" . >"$IMG/build-$name.log" 2>&1 \
      || { tail -30 "$IMG/build-$name.log" >&2; return 1; }
    timing "image $name" "$t" >&2
  fi
  echo "$tag"
}

for tool in dockerd debootstrap go; do
  if ! command -v "$tool" >/dev/null; then
    msg="[images] no $tool (apt-get install docker.io debootstrap): images not built"
    if [[ "${CI:-}" == true ]]; then echo "$msg" >&2; exit 1; fi
    echo "$msg; the docker and cluster tiers will skip" >&2; exit 0
  fi
done
with_lock images
docker_up
BASE_IMAGE="$(base_image)"
PAUSE_IMAGE="$(pause_image)"
RLSTREAM_IMAGE="$(app_image rlstream docker/Dockerfile "$BASE_IMAGE")"
TRAINER_IMAGE="" MODEL_STAGE=""
if [[ "${RLSTREAM_SKIP_TRAINER_IMAGE:-0}" != 1 ]]; then
  # The trainer's base-model stage, tagged so the prune below keeps its layers: a code change
  # then reuses the converted model instead of converting it again.
  MODEL_STAGE="$(app_image rlstream-trainer-model docker/Dockerfile.trainer-cpu "$BASE_IMAGE" \
    model shared/rlstream/errors.py shared/rlstream/training/basemodel.py)"
  TRAINER_IMAGE="$(app_image rlstream-trainer-cpu docker/Dockerfile.trainer-cpu "$BASE_IMAGE")"
fi
# Drop superseded tags of these repositories (a trainer image is ~7 GB; layers shared with
# the current tag stay) and dangling build layers.
for cur in "$BASE_IMAGE" "$PAUSE_IMAGE" "$RLSTREAM_IMAGE" $MODEL_STAGE $TRAINER_IMAGE; do
  docker images --format '{{.Repository}}:{{.Tag}}' "${cur%%:*}" | grep -vxF "$cur" \
    | xargs -r docker rmi >/dev/null 2>&1 || true
done
docker image prune -f >/dev/null 2>&1 || true
cat > "$IMG/images.env.tmp" <<ENV
BASE_IMAGE=$BASE_IMAGE
PAUSE_IMAGE=$PAUSE_IMAGE
RLSTREAM_IMAGE=$RLSTREAM_IMAGE
TRAINER_IMAGE=$TRAINER_IMAGE
ENV
mv "$IMG/images.env.tmp" "$IMG/images.env"
cat "$IMG/images.env"

#!/usr/bin/env bash
# Builds the kube-proxy-rs container image as an OCI archive, then checks
# the archive it wrote: its binary answers --version, and its --dry-run of
# examples/ prints exactly what the freshly built binary prints on the host.
#
#   scripts/image.sh [OUT]      (default OUT: target/kube-proxy-rs-image.tar; as root)
#   scripts/image.sh --prepare  only what takes long: the tools, the Debian
#                               root file system and the release build (the
#                               test command runs it beside the tests)
#
# The binary is built where cargo builds (CARGO_TARGET_DIR when set); the
# image's work files stay in the checkout's target/image/.
#
# No image registry is reachable, so the base is built from Debian's
# packages: mmdebstrap (essential variant, merged /usr, no recommends, no
# docs, man pages or locales) writes a root file system with the tools the
# proxy runs (iptables with both backends, ipset, conntrack, nftables,
# iproute2); buildah (vfs storage and chroot isolation under target/, so no
# daemon and nothing in the host's container storage) adds it and the
# stripped binary, as /usr/local/bin/kube-proxy-rs and /usr/local/bin/kube-proxy
# (the path kubeadm's DaemonSet runs), and commits oci-archive:OUT.
# The root file system is cached in target/image/ by its recipe.
set -euo pipefail
PREPARE=0
if [ "${1:-}" = --prepare ]; then PREPARE=1; shift; fi
# OUT as the caller named it, from the caller's folder.
OUT=$(realpath -m "${1:-$(dirname "$0")/../target/kube-proxy-rs-image.tar}")
cd "$(dirname "$0")/.."
. scripts/target-dir.sh
SUITE=bookworm
PACKAGES=iptables,ipset,conntrack,nftables,iproute2
WORK=target/image
STORE=(--storage-driver vfs --root "$PWD/$WORK/storage" --runroot "$PWD/$WORK/run")

die() { echo "image.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap and buildah write a root file system)"

install_tools() {
  local missing=()
  for tool in mmdebstrap buildah strip; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  [ "${#missing[@]}" -eq 0 ] && return
  echo "image.sh: installing mmdebstrap buildah binutils"
  # waiting for dpkg's lock: scripts/ipvs-vm.sh may be installing beside
  apt-get update -qq -o DPkg::Lock::Timeout=600
  # with their recommends (gpg, fakechroot, crun, ...), as tested
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 mmdebstrap buildah binutils >/dev/null
}

# The Debian root file system, built once per recipe, into $BASE.
rootfs() {
  local recipe="$SUITE $PACKAGES v1"
  BASE="$WORK/rootfs-$(echo "$recipe" | sha256sum | cut -c1-12).tar"
  local tar=$BASE
  if [ ! -s "$tar" ]; then
    echo "image.sh: mmdebstrap $SUITE with $PACKAGES" >&2
    mmdebstrap --quiet --format=tar --variant=essential --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
      --aptopt='APT::Install-Recommends "false"' --include="$PACKAGES" \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
      --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --customize-hook='chroot "$1" dpkg --purge --force-remove-essential --force-depends perl-base >/dev/null' \
      --customize-hook='rm -rf "$1"/var/cache/* "$1"/var/lib/apt/lists/* "$1"/var/log/*' \
      "$SUITE" "$tar.partial" >/dev/null 2>"$WORK/mmdebstrap.log" || die "mmdebstrap failed: see $WORK/mmdebstrap.log"
    mv "$tar.partial" "$tar"
  fi
}

# The stripped binary and the kube-proxy name kubeadm's DaemonSet runs, as
# the tar $LAYER.
binary_layer() {
  cargo build --release --quiet -p kube-proxy-rs
  BINARY="$(cargo_target_dir)/release/kube-proxy-rs"
  local stage="$WORK/stage"
  rm -rf "$stage" && mkdir -p "$stage/usr/local/bin"
  strip -o "$stage/usr/local/bin/kube-proxy-rs" "$BINARY"
  ln -s kube-proxy-rs "$stage/usr/local/bin/kube-proxy"
  LAYER="$WORK/binary.tar"
  tar -C "$stage" -cf "$LAYER" usr
}

build() {
  local base=$1 layer=$2 version=$3 ctr
  ctr=$(buildah "${STORE[@]}" from --quiet scratch)
  buildah "${STORE[@]}" add --quiet "$ctr" "$base" / >/dev/null
  buildah "${STORE[@]}" add --quiet "$ctr" "$layer" / >/dev/null
  buildah "${STORE[@]}" config --entrypoint '["/usr/local/bin/kube-proxy-rs"]' --cmd '' \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --label org.opencontainers.image.title=kube-proxy-rs \
    --label "org.opencontainers.image.version=$version" "$ctr"
  rm -f "$OUT"
  buildah "${STORE[@]}" commit --quiet --format oci --rm "$ctr" "oci-archive:$OUT:kube-proxy-rs:$version" >/dev/null
}

# Runs the binary of the archive with `args`, in a network namespace of its own.
run_in_image() {
  local ns=$1; shift
  local ctr
  ctr=$(buildah "${STORE[@]}" from --quiet "oci-archive:$OUT")
  ip netns exec "$ns" buildah "${STORE[@]}" run --isolation chroot --volume "$PWD/examples:/examples:ro" "$ctr" -- "$@" || { buildah "${STORE[@]}" rm "$ctr" >/dev/null; return 1; }
  buildah "${STORE[@]}" rm "$ctr" >/dev/null
}

check() {
  local ns="kprs-image-$$"
  ip netns add "$ns"
  trap 'ip netns delete '"$ns"' 2>/dev/null || true' RETURN
  local version
  version=$(run_in_image "$ns" /usr/local/bin/kube-proxy --version)
  [ "$version" = "$("$BINARY" --version)" ] || die "the image's --version says '$version'"
  local args=(--hostname-override node-a --cluster-cidr 10.244.0.0/16 --dry-run)
  local ours theirs
  ours=$(ip netns exec "$ns" "$BINARY" --manifests examples/cluster.yaml "${args[@]}")
  theirs=$(run_in_image "$ns" /usr/local/bin/kube-proxy-rs --manifests /examples/cluster.yaml "${args[@]}")
  [ -n "$ours" ] && [ "$ours" = "$theirs" ] || die "the image's --dry-run of examples/cluster.yaml differs from the host binary's"
  echo "image.sh: checked: $version; --dry-run of examples/cluster.yaml as on the host ($(echo "$theirs" | wc -l) lines)"
}

install_tools
mkdir -p "$WORK" "$(dirname "$OUT")"
rootfs
if [ "$PREPARE" = 1 ]; then
  cargo build --release --quiet -p kube-proxy-rs
  echo "image.sh: prepared: tools, root file system $BASE, release build"
  exit 0
fi
binary_layer
version=$("$BINARY" --version | awk '{print $2}')
build "$BASE" "$LAYER" "$version"
check
echo "image.sh: wrote $OUT ($(du -m "$OUT" | cut -f1) MiB; root file system $(du -m "$BASE" | cut -f1) MiB, binary $(du -m "$WORK/stage/usr/local/bin/kube-proxy-rs" | cut -f1) MiB)"

#!/usr/bin/env bash
# scripts/conformance/images.sh SOCKET — build the few images the [sig-network] tests run and import them into the
# containerd listening on SOCKET (namespace k8s.io), under the names test/utils/image/manifest.go gives, so the
# kubelet finds them and never pulls (this machine reaches no registry):
#   registry.k8s.io/e2e-test-images/agnhost:2.63.0 (and :2.55)  /agnhost + a toolbox, ENTRYPOINT /agnhost, CMD pause
#   registry.k8s.io/e2e-test-images/busybox:1.37.0-1           the toolbox, CMD sh
#   registry.k8s.io/pause:3.10.2                               /pause only
# The toolbox is Debian's busybox-static plus the host's GNU wget, curl, netcat-openbsd, bash and ip with the
# libraries they load (busybox 1.35's `wget -T` segfaults, and the tests call curl and `nc -z`). Built once with
# buildah (vfs storage, chroot isolation) into $CONF_HOME/images/*.tar; imported again for each fresh containerd.
set -euo pipefail
SOCK=${1:?usage: images.sh CONTAINERD_SOCKET}
CONF_HOME=${CONF_HOME:-/var/tmp/kprs-conformance}
CONTROL_PLANE_HOME=${CONTROL_PLANE_HOME:-/var/tmp/kprs-control-plane}
KUBE_SRC=${KUBE_SRC:-$CONTROL_PLANE_HOME/src/kubernetes}
BIN=${CONF_BIN:-$CONF_HOME/bin} IMG=$CONF_HOME/images
say() { echo "[conformance-images $(date +%H:%M:%S)] $*"; }
die() { echo "conformance/images.sh: $*" >&2; exit 1; }
E2E=registry.k8s.io/e2e-test-images
TOOLS=(/usr/bin/wget /usr/bin/curl /usr/bin/nc.openbsd /usr/bin/bash /usr/sbin/ip)
for t in busybox buildah ctr "${TOOLS[@]}"; do command -v "$t" >/dev/null || die "$t missing (apt-get install busybox-static buildah containerd wget curl netcat-openbsd bash iproute2)"; done
for b in agnhost pause; do [ -x "$BIN/$b" ] || die "no $BIN/$b (run scripts/conformance/build.sh)"; done

# copy_with_libs ROOT FILE... : FILE and every library ldd names, at the same paths under ROOT
copy_with_libs() {
  local root=$1 f l; shift
  for f in "$@"; do
    for l in "$f" $(ldd "$f" 2>/dev/null | grep -oE '/[^ ]+' | sort -u); do
      mkdir -p "$root$(dirname "$l")"; cp -L "$l" "$root$l"
    done
  done
}

toolbox_root() {
  local r=$1 a
  rm -rf "$r"; mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,uploads,root}
  chmod 1777 "$r/tmp"
  cp "$(command -v busybox)" "$r/bin/busybox"
  for a in $(busybox --list); do [ -e "$r/bin/$a" ] || ln -s busybox "$r/bin/$a"; done
  copy_with_libs "$r" "${TOOLS[@]}"
  for a in wget curl bash ip; do ln -sf "$(command -v "$a")" "$r/bin/$a"; done
  ln -sf /usr/bin/nc.openbsd "$r/bin/nc"
  ln -sf /usr/bin/bash "$r/bin/sh"   # busybox-static's sh runs its own applets (wget, nc) before PATH
  printf 'root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/tmp:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n' > "$r/etc/passwd"
  printf 'root:x:0:\nuser-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\nnobody:x:65534:\n' > "$r/etc/group"
  printf 'hosts: files dns\n' > "$r/etc/nsswitch.conf"
}

# image NAME ROOT ENTRYPOINT_JSON CMD_JSON : a one-layer image from ROOT, saved as $IMG/<file>.tar
image() {
  local name=$1 root=$2 ep=$3 cmd=$4 out c
  out=$IMG/$(echo "$name" | tr '/:' '__').tar
  [ -s "$out" ] && return 0
  c=$(buildah "${BA[@]}" from scratch)
  buildah "${BA[@]}" copy "$c" "$root" / >/dev/null
  buildah "${BA[@]}" config --entrypoint "$ep" --cmd "$cmd" --os linux --arch amd64 "$c"
  buildah "${BA[@]}" commit -q "$c" "$name" >/dev/null
  buildah "${BA[@]}" rm "$c" >/dev/null
  buildah "${BA[@]}" push -q "$name" "docker-archive:$out.tmp:$name" && mv "$out.tmp" "$out"
  say "built $name"
}

mkdir -p "$IMG"
BA=(--root "$IMG/storage" --runroot "$IMG/run" --storage-driver vfs)
export BUILDAH_ISOLATION=chroot
if [ ! -s "$IMG/done" ]; then
  toolbox_root "$IMG/toolbox"
  cp "$BIN/agnhost" "$IMG/toolbox/agnhost"; ln -sf agnhost "$IMG/toolbox/agnhost-2"
  for f in localhost.crt localhost.key; do cp "$KUBE_SRC/test/images/agnhost/porter/$f" "$IMG/toolbox/$f"; done
  rm -rf "$IMG/pause-root"; mkdir -p "$IMG/pause-root"; cp "$BIN/pause" "$IMG/pause-root/pause"
  image "$E2E/agnhost:2.63.0" "$IMG/toolbox" '["/agnhost"]' '["pause"]'
  image "$E2E/agnhost:2.55" "$IMG/toolbox" '["/agnhost"]' '["pause"]'
  image "$E2E/busybox:1.37.0-1" "$IMG/toolbox" '[]' '["sh"]'
  image "registry.k8s.io/pause:3.10.2" "$IMG/pause-root" '["/pause"]' '[]'
  rm -rf "$IMG/storage" "$IMG/run" "$IMG/toolbox" "$IMG/pause-root"
  date > "$IMG/done"
fi
for t in "$IMG"/*.tar; do
  ctr --address "$SOCK" -n k8s.io images import "$t" >/dev/null || die "ctr import $t failed"
done
say "imported: $(ctr --address "$SOCK" -n k8s.io images ls -q | grep -v '^sha256:' | tr '\n' ' ')"

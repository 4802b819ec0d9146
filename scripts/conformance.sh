#!/usr/bin/env bash
# scripts/conformance.sh [--mode iptables|nftables|ipvs] [--proxy ours|upstream] [--focus REGEX] [--skip REGEX]
#                        [--set services|network|services-all] [--nodes 1|2] [--seed N] [--keep] [--reuse]
# scripts/conformance.sh down
#
# Upstream's own e2e conformance tests (`e2e.test` of Kubernetes v1.36) against a real cluster made on this machine
# inside network namespaces (scripts/conformance/cluster.sh: etcd, kube-apiserver, controller-manager, scheduler, a
# small DNS, containerd and a kubelet per node), with the proxy under test on every node: kube-proxy-rs
# (--proxy ours, target/release/kube-proxy-rs or $KPRS_BIN) or upstream's kube-proxy (--proxy upstream).
#   --set services      (default) `[sig-network] Services .*[Conformance]`: 15 tests, one node
#   --set network       `[sig-network] .*[Conformance]` less `[sig-network] DNS` (8 tests of the cluster DNS, which
#                       here is a stub beside the Service path: they would test dns.py, not the proxy)
#   --set services-all  `[sig-network] Services` less [Disruptive], [Feature:…], [FeatureGate:…], [Alpha], [Beta],
#                       [Flaky] (49 tests; those needing more nodes than there are skip themselves)
#   --focus/--skip      your own ginkgo regexes instead
#   --seed N            ginkgo's random seed (default 1: every proxy sees the tests in the same order)
#   --keep              leave the cluster up afterwards (`scripts/conformance.sh down` removes it); --reuse: run on
#                       the cluster already up (its proxy is replaced)
# Results: $CONF_HOME/results/<time>-<proxy>-<mode>-<n>node/ (default CONF_HOME=/var/tmp/kprs-conformance):
# Several clusters may run at once with distinct CONF_HOME and CONF_NETNS_PREFIX (CONF_BIN: one build for all).
# junit_01.xml, e2e.log, summary.txt, the proxies' and kubelets' logs. The pass/fail summary is printed at the end.
# Needs root and: the Kubernetes v1.36 tree (KUBE_SRC, default $CONTROL_PLANE_HOME/src/kubernetes) with the binaries
# ../shared/tools/control-plane/build.sh makes (CP_BIN, default $CONTROL_PLANE_HOME/bin, kubelet and kube-scheduler
# included); scripts/conformance/build.sh builds e2e.test, agnhost and pause from it (~6 min the first time). Debian:
# containerd runc containernetworking-plugins buildah busybox-static netcat-openbsd curl wget openssl python3.
# Not in CI: CI cannot fetch the Kubernetes source. IPVS mode needs a kernel with IPVS (this machine has none).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
. "$HERE/conformance/lib.sh"
MODE=iptables PROXY=ours NODES=1 SET=services FOCUS= SKIP= KEEP=0 REUSE=0 SEED=1
usage() { sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --mode) MODE=${2:?}; shift ;;
    --proxy) PROXY=${2:?}; shift ;;
    --nodes) NODES=${2:?}; shift ;;
    --set) SET=${2:?}; shift ;;
    --focus) FOCUS=${2:?}; shift ;;
    --skip) SKIP=${2:?}; shift ;;
    --seed) SEED=${2:?}; shift ;;
    --keep) KEEP=1 ;;
    --reuse) REUSE=1; KEEP=1 ;;
    down) exec "$HERE/conformance/cluster.sh" down ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
  shift
done
case $MODE in iptables|nftables|ipvs) ;; *) die "--mode must be iptables, nftables or ipvs" ;; esac
case $PROXY in ours|upstream) ;; *) die "--proxy must be ours or upstream" ;; esac
if [ -z "$FOCUS" ]; then
  case $SET in
    services) FOCUS='\[sig-network\] Services .*\[Conformance\]' ;;
    network) FOCUS='\[sig-network\] .*\[Conformance\]'
      SKIP=${SKIP:-'\[sig-network\] DNS '} ;;
    services-all) FOCUS='\[sig-network\] Services'
      SKIP=${SKIP:-'\[Disruptive\]|\[Feature:|\[FeatureGate:|\[Alpha\]|\[Beta\]|\[Flaky\]'} ;;
    *) die "--set must be services, network or services-all" ;;
  esac
fi
[ "$MODE" = ipvs ] && [ ! -d /proc/sys/net/ipv4/vs ] && die "IPVS mode: this kernel has no IPVS (no /proc/sys/net/ipv4/vs)"

"$HERE/conformance/build.sh" || die "build failed (see above)"
cluster() { "$HERE/conformance/cluster.sh" "$@"; }
if [ "$REUSE" = 1 ] && [ -e "/run/netns/$HUB" ]; then
  cluster proxy-stop
  NODES=$(cat "$CONF_HOME/nodes")
else
  [ -e "/run/netns/$HUB" ] && die "a conformance cluster is up already: --reuse it, or scripts/conformance.sh down"
  [ "$KEEP" = 1 ] || trap 'cluster down' EXIT
  cluster up "$NODES" || exit 1
fi
cluster proxy "$PROXY" "$MODE" || exit 1

OUT=$CONF_HOME/results/$(date -u +%Y%m%dT%H%M%SZ)-$PROXY-$MODE-${NODES}node
mkdir -p "$OUT"
{ echo "proxy: $(cat "$CONF_HOME/proxy")"; echo "nodes: $NODES"; echo "focus: $FOCUS"; echo "skip: $SKIP"; echo "ginkgo seed: $SEED"
  echo "repo commit: $(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null)"; echo "started: $(date -u)"; } > "$OUT/run.txt"
say "e2e.test --ginkgo.focus='$FOCUS' ${SKIP:+--ginkgo.skip='$SKIP' }(log: $OUT/e2e.log)"
t0=$SECONDS
nsenter --net="/run/netns/$(node_ns 1)" -- "$BIN/e2e.test" --kubeconfig="$KC" --kubectl-path="$CP_BIN/kubectl" \
  --provider=skeleton --report-dir="$OUT" --disable-log-dump --dump-logs-on-failure=false --num-nodes="$NODES" \
  --ginkgo.focus="$FOCUS" ${SKIP:+--ginkgo.skip="$SKIP"} --ginkgo.seed="$SEED" --ginkgo.timeout=4h --ginkgo.no-color --ginkgo.v \
  > "$OUT/e2e.log" 2>&1
rc=$?
echo "finished: $(date -u) after $((SECONDS - t0)) s, e2e.test exit $rc" >> "$OUT/run.txt"
cp "$CONF_HOME"/logs/proxy-n*.log "$CONF_HOME"/logs/kubelet-n*.log "$OUT/" 2>/dev/null
python3 "$HERE/conformance/summary.py" "$OUT" | tee "$OUT/summary.txt"
say "results: $OUT ($((SECONDS - t0)) s)"
exit $rc

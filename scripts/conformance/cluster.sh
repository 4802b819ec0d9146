#!/usr/bin/env bash
# scripts/conformance/cluster.sh up NODES | down | proxy PROXY MODE | proxy-stop — the conformance cluster, all of it
# inside network namespaces this script makes (nothing on the host's own links, routes, netfilter tables or sysctls):
#   $PREFIX-hub            a bridge br0: the wire between the nodes
#   $PREFIX-n1 .. -nN      node i: eth0 192.168.77.1i/24 on br0, pods 10.244.i.0/24 on cni0 (Debian's CNI bridge +
#                          host-local), a route to every other node's pods; its own containerd (Debian's 1.6, runc) and
#                          kubelet v1.36, each in its own UTS namespace (hostname = node name) and the proxy under test.
#   node 1 also runs etcd, kube-apiserver (https://192.168.77.11:6443), kube-controller-manager, kube-scheduler and
#   dns.py (the cluster DNS on 192.168.77.11:53).
# The kubelet runs in a child mount namespace: its root dir is a shared bind mount (so runc sees the volumes it
# mounts) and the kernel tunables it would otherwise set on the host (vm.overcommit_memory, kernel.panic,
# kernel.panic_on_oops) read as already set there. State, logs and pid files: $CONF_HOME (default
# /var/tmp/kprs-conformance); `down` stops what `up` started (by pid file), removes pods, cgroups, mounts and
# the namespaces.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
. "$HERE/lib.sh"
LOGS=$CONF_HOME/logs
CGROUP_CONTROLLERS="cpu cpuacct cpuset memory devices freezer blkio pids systemd"

need_tools() {
  local t miss=()
  for t in ip nsenter unshare openssl python3 containerd runc ctr buildah busybox curl; do command -v "$t" >/dev/null || miss+=("$t"); done
  [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] || miss+=("CNI plugins in /usr/lib/cni")
  [ ${#miss[@]} -eq 0 ] || die "missing: ${miss[*]} (apt-get install containerd runc containernetworking-plugins buildah busybox-static netcat-openbsd curl wget openssl)"
  for t in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
    [ -x "$CP_BIN/$t" ] || die "no $CP_BIN/$t (build it: MICROSHIFT_GIT=... ../shared/tools/control-plane/build.sh kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy)"
  done
  for t in pause agnhost; do [ -x "$BIN/$t" ] || die "no $BIN/$t (run scripts/conformance/build.sh)"; done
}

make_pki() {
  [ -f "$PKI/admin.crt" ] && [ -f "$KC" ] && return 0
  local q=(-days 365 -sha256)
  rm -rf "$PKI"; mkdir -p "$PKI"; chmod 700 "$PKI"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.crt" "${q[@]}" -subj "/CN=kprs-conformance-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null || die "ca"
  signed() {  # name subject extensions
    openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$1.key" -out "$PKI/$1.csr" -subj "$2" 2>/dev/null || die "$1 csr"
    printf '%s\n' "$3" > "$PKI/$1.ext"
    openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -out "$PKI/$1.crt" \
      "${q[@]}" -extfile "$PKI/$1.ext" 2>/dev/null || die "$1 cert"
    rm -f "$PKI/$1.csr" "$PKI/$1.ext"
  }
  signed apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:$API_IP,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  signed admin "/O=system:masters/CN=admin" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null && openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null || die "sa key"
  chmod 600 "$PKI"/*.key
  local b="base64 -w0"
  cat > "$KC" <<KC
apiVersion: v1
kind: Config
clusters:
- name: conformance
  cluster:
    server: https://$API_IP:6443
    certificate-authority-data: $($b < "$PKI/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $($b < "$PKI/admin.crt")
    client-key-data: $($b < "$PKI/admin.key")
contexts:
- name: conformance
  context: {cluster: conformance, user: admin}
current-context: conformance
KC
  chmod 600 "$KC"
}

# ---- network: the hub bridge, one namespace per node, routes between the nodes' pod networks
net_up() {
  local n=$1 i j ns
  ip netns add "$HUB" || die "netns $HUB exists (run: $0 down)"
  ip -n "$HUB" link set lo up
  ip -n "$HUB" link add br0 type bridge && ip -n "$HUB" link set br0 up || die "bridge in $HUB"
  for i in $(seq 1 "$n"); do
    ns=$(node_ns "$i")
    ip netns add "$ns" || die "netns $ns exists (run: $0 down)"
    ip -n "$HUB" link add "n$i" type veth peer name eth0 netns "$ns" || die "veth for $ns"
    ip -n "$HUB" link set "n$i" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$(node_ip "$i")/24" dev eth0 && ip -n "$ns" link set eth0 up || die "eth0 in $ns"
    ip -n "$ns" route add default dev eth0 || die "default route in $ns"
    in_ns "$ns" sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 \
      net.bridge.bridge-nf-call-ip6tables=1 >/dev/null || die "sysctls in $ns (ip_forward, bridge-nf-call-iptables)"
  done
  for i in $(seq 1 "$n"); do for j in $(seq 1 "$n"); do
    [ "$i" = "$j" ] || ip -n "$(node_ns "$i")" route add "$POD_NET.$j.0/24" via "$(node_ip "$j")" || die "pod route $i->$j"
  done; done
}

# ---- control plane, in node 1's namespace
control_plane_up() {
  local ns; ns=$(node_ns 1)
  mkdir -p "$LOGS" "$CONF_HOME/etcd"
  spawn etcd "$LOGS/etcd.log" nsenter --net="/run/netns/$ns" -- "$CP_BIN/etcd" --name conformance \
    --data-dir "$CONF_HOME/etcd" --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster conformance=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381 \
    --unsafe-no-fsync --log-level warn
  wait_for "etcd healthy" 60 etcd in_ns "$ns" curl -sf --max-time 1 http://127.0.0.1:2379/health
  spawn kube-apiserver "$LOGS/kube-apiserver.log" nsenter --net="/run/netns/$ns" -- "$CP_BIN/kube-apiserver" \
    --etcd-servers=http://127.0.0.1:2379 --secure-port=6443 --bind-address=0.0.0.0 --advertise-address="$API_IP" \
    --service-cluster-ip-range="$SERVICE_CIDR" --authorization-mode=Node,RBAC --client-ca-file="$PKI/ca.crt" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --kubelet-preferred-address-types=InternalIP --kubelet-client-certificate="$PKI/admin.crt" \
    --kubelet-client-key="$PKI/admin.key" --allow-privileged=true --cert-dir="$CONF_HOME/apiserver-certs" --v=1
  wait_for "kube-apiserver ready" 120 kube-apiserver kctl get --raw /readyz
  spawn kube-controller-manager "$LOGS/kube-controller-manager.log" nsenter --net="/run/netns/$ns" -- \
    "$CP_BIN/kube-controller-manager" --kubeconfig="$KC" --bind-address=127.0.0.1 --controllers='*' \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --service-cluster-ip-range="$SERVICE_CIDR" --use-service-account-credentials=false --leader-elect=false --v=1
  spawn kube-scheduler "$LOGS/kube-scheduler.log" nsenter --net="/run/netns/$ns" -- \
    "$CP_BIN/kube-scheduler" --kubeconfig="$KC" --bind-address=127.0.0.1 --leader-elect=false --v=1
  spawn dns "$LOGS/dns.log" nsenter --net="/run/netns/$ns" -- python3 "$HERE/dns.py" --listen "$API_IP" --port 53 \
    --pki "$PKI" --api "https://$API_IP:6443"
  wait_for "service account default/default" 120 kube-controller-manager kctl -n default get serviceaccount default
}

kctl() { in_ns "$(node_ns 1)" "$CP_BIN/kubectl" --kubeconfig="$KC" --request-timeout=10s "$@"; }

# ---- one node: containerd, images, kubelet
containerd_config() {  # i dir
  local i=$1 d=$2
  mkdir -p "$d/cni/net.d" "$d/containerd"
  cat > "$d/cni/net.d/10-bridge.conflist" <<CNI
{"cniVersion": "0.4.0", "name": "kprsc", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$d/cni/ipam", "ranges": [[{"subnet": "$POD_NET.$i.0/24"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CNI
  cat > "$d/containerd/config.toml" <<TOML
version = 2
root = "$d/containerd/root"
state = "$d/containerd/state"
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = "$d/containerd.ttrpc.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10.2"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      Root = "$d/runc"
      SystemdCgroup = false
TOML
}

kubelet_config() {  # i dir
  local i=$1 d=$2
  mkdir -p "$d/kubelet" "$d/pod-logs" "$d/fake-sysctl"
  : > "$d/resolv.conf"
  cat > "$d/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: /$(node_ns "$i")
containerRuntimeEndpoint: unix://$d/containerd.sock
podLogsDir: $d/pod-logs
clusterDNS: [$API_IP]
clusterDomain: cluster.local
resolvConf: $d/resolv.conf
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: AlwaysAllow}
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 110
YAML
  printf 1 > "$d/fake-sysctl/overcommit_memory"; printf 10 > "$d/fake-sysctl/panic"; printf 1 > "$d/fake-sysctl/panic_on_oops"
}

cgroups_up() {  # i
  local c p
  for c in $CGROUP_CONTROLLERS; do
    p=/sys/fs/cgroup/$c/$(node_ns "$1")
    [ -d "/sys/fs/cgroup/$c" ] || continue
    mkdir -p "$p" || die "cgroup $p"
    if [ "$c" = cpuset ]; then cat /sys/fs/cgroup/cpuset/cpuset.cpus > "$p/cpuset.cpus"; cat /sys/fs/cgroup/cpuset/cpuset.mems > "$p/cpuset.mems"; fi
  done
}

# the kubelet in its own UTS and mount namespace: hostname = node name; the three tunables it would set read as set
KUBELET_WRAP='hostname "$0" && for t in vm/overcommit_memory kernel/panic kernel/panic_on_oops; do
  mount --bind "$1/fake-sysctl/${t#*/}" "/proc/sys/$t" || exit 1; done; shift; exec "$@"'

node_up() {  # i
  local i=$1 d ns name
  d=$CONF_HOME/n$i ns=$(node_ns "$i") name=$(node_name "$i")
  containerd_config "$i" "$d"; kubelet_config "$i" "$d"; cgroups_up "$i"
  spawn "containerd-n$i" "$LOGS/containerd-n$i.log" nsenter --net="/run/netns/$ns" -- unshare --uts -- \
    sh -c 'hostname "$0" && exec containerd --config "$1"' "$name" "$d/containerd/config.toml"
  wait_for "containerd n$i" 60 "containerd-n$i" ctr --address "$d/containerd.sock" version
  "$HERE/images.sh" "$d/containerd.sock" || die "images for node $i"
  mountpoint -q "$d/kubelet" || { mount --bind "$d/kubelet" "$d/kubelet" && mount --make-shared "$d/kubelet"; } || die "shared mount $d/kubelet"
  spawn "kubelet-n$i" "$LOGS/kubelet-n$i.log" nsenter --net="/run/netns/$ns" -- \
    unshare --uts --mount --propagation unchanged -- sh -c "$KUBELET_WRAP" "$name" "$d" \
    "$CP_BIN/kubelet" --config="$d/kubelet.yaml" --kubeconfig="$KC" --root-dir="$d/kubelet" \
    --cert-dir="$d/kubelet/pki" --hostname-override="$name" --node-ip="$(node_ip "$i")" --v=1
  wait_for "node $name Ready" 180 "kubelet-n$i" node_ready "$name"
}

node_ready() { [ "$(kctl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }

# ---- the proxy under test, one per node
proxy_up() {  # PROXY MODE
  local proxy=$1 mode=$2 bin i ns name n
  case $proxy in
    ours) bin=${KPRS_BIN:-$(cd "$HERE/../.." && pwd)/target/release/kube-proxy-rs} ;;
    upstream) bin=$CP_BIN/kube-proxy ;;
    *) die "--proxy must be ours or upstream" ;;
  esac
  [ -x "$bin" ] || die "no proxy binary $bin (cargo build --release -p kube-proxy-rs, or set KPRS_BIN)"
  n=$(cat "$CONF_HOME/nodes")
  for i in $(seq 1 "$n"); do
    ns=$(node_ns "$i") name=$(node_name "$i")
    spawn "proxy-n$i" "$LOGS/proxy-n$i.log" env RUST_LOG="${RUST_LOG:-info,source=debug}" \
      nsenter --net="/run/netns/$ns" -- "$bin" --kubeconfig="$KC" --hostname-override="$name" --proxy-mode="$mode" \
      --cluster-cidr="$POD_NET.0.0/16" --conntrack-max-per-core=0 --v=2
    wait_for "proxy on $name healthy" 90 "proxy-n$i" in_ns "$ns" curl -sf --max-time 2 http://127.0.0.1:10256/healthz
  done
  echo "$proxy $mode $bin" > "$CONF_HOME/proxy"
}

proxy_down() {
  local i
  for i in 1 2; do stop "proxy-n$i" 15; done
  rm -f "$CONF_HOME/proxy"
}

up() {
  local n=${1:-1} i
  case $n in 1|2) ;; *) die "NODES must be 1 or 2" ;; esac
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces, containerd, kubelet)"
  need_tools
  [ -e "/run/netns/$HUB" ] && die "a conformance cluster is up already ($0 down first)"
  mkdir -p "$CONF_HOME" "$LOGS" "$RUN"; echo "$n" > "$CONF_HOME/nodes"
  make_pki
  say "network: $HUB + $n node namespace(s)"; net_up "$n"
  say "control plane in $(node_ns 1)"; control_plane_up
  for i in $(seq 1 "$n"); do say "node $(node_name "$i")"; node_up "$i"; done
  say "cluster up: $n node(s); kubeconfig $KC (use it inside $(node_ns 1))"
}

# ---- down: pods, kubelets, containerds (and what they left: tasks, mounts, cgroups), control plane, namespaces
node_down() {  # i
  local i=$1 d s t c
  d=$CONF_HOME/n$i s=$d/containerd.sock
  stop "kubelet-n$i" 20
  if alive "containerd-n$i"; then
    for t in $(ctr --address "$s" -n k8s.io tasks ls -q 2>/dev/null); do ctr --address "$s" -n k8s.io tasks kill -s KILL "$t" >/dev/null 2>&1; done
    sleep 1
    for t in $(ctr --address "$s" -n k8s.io tasks ls -q 2>/dev/null); do ctr --address "$s" -n k8s.io tasks rm -f "$t" >/dev/null 2>&1; done
    for c in $(ctr --address "$s" -n k8s.io containers ls -q 2>/dev/null); do ctr --address "$s" -n k8s.io containers rm "$c" >/dev/null 2>&1; done
  fi
  stop "containerd-n$i" 20
  # shims of this containerd that outlived it (their command line names its socket)
  for t in $(pgrep -f "containerd-shim-runc-v2 .*-address $s" 2>/dev/null); do kill -KILL "$t" 2>/dev/null; done
  if [ -d "$d" ]; then
    grep -oE " $d/[^ ]+" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
  fi
  for c in $CGROUP_CONTROLLERS unified; do   # unified: the hybrid layout's v2 tree, where runc makes pods' cgroups too
    [ -d "/sys/fs/cgroup/$c/$(node_ns "$i")" ] && find "/sys/fs/cgroup/$c/$(node_ns "$i")" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  return 0
}

down() {
  local i
  proxy_down
  for i in 2 1; do node_down "$i"; done
  for p in dns kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$p" 20; done
  for i in 1 2; do ip netns del "$(node_ns "$i")" 2>/dev/null; done
  ip netns del "$HUB" 2>/dev/null
  rm -rf "$CONF_HOME/etcd" "$CONF_HOME"/n[12] "$CONF_HOME/apiserver-certs" "$CONF_HOME/nodes"
  say "down"
}

case ${1:-} in
  up) up "${2:-1}" ;;
  down) down ;;
  proxy) proxy_up "${2:?PROXY}" "${3:?MODE}" ;;
  proxy-stop) proxy_down ;;
  kubectl) shift; kctl "$@" ;;
  *) echo "usage: $0 up [1|2] | down | proxy ours|upstream iptables|nftables|ipvs | proxy-stop | kubectl ARGS..." >&2; exit 2 ;;
esac

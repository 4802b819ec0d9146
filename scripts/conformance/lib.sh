# scripts/conformance/lib.sh — helpers the conformance scripts source: messages, the layout (names, addresses,
# directories) they share, and starting / stopping processes by pid file only.
CONF_HOME=${CONF_HOME:-/var/tmp/kprs-conformance}
CONTROL_PLANE_HOME=${CONTROL_PLANE_HOME:-/var/tmp/kprs-control-plane}
KUBE_SRC=${KUBE_SRC:-$CONTROL_PLANE_HOME/src/kubernetes}
CP_BIN=${CP_BIN:-$CONTROL_PLANE_HOME/bin}        # etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy
BIN=${CONF_BIN:-$CONF_HOME/bin}                  # e2e.test agnhost pause (scripts/conformance/build.sh)
RUN=$CONF_HOME/run PKI=$CONF_HOME/pki KC=$CONF_HOME/kubeconfig
PREFIX=${CONF_NETNS_PREFIX:-kprsc}               # network namespaces: $PREFIX-hub (the wire), $PREFIX-n1, $PREFIX-n2
HUB=$PREFIX-hub
NODE_NET=192.168.77                              # node i: $NODE_NET.1i/24 on eth0 in $PREFIX-ni
POD_NET=10.244                                   # node i's pods: $POD_NET.i.0/24 on its bridge cni0
SERVICE_CIDR=10.96.0.0/16
API_IP=$NODE_NET.11                              # the control plane and the DNS run in node 1's namespace
say() { echo "[conformance $(date +%H:%M:%S)] $*"; }
die() { echo "conformance: $*" >&2; exit 1; }
node_ns() { echo "$PREFIX-n$1"; }
node_name() { echo "$PREFIX-node$1"; }
node_ip() { echo "$NODE_NET.1$1"; }
in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" -- "$@"; }

# spawn NAME LOG CMD... : CMD in its own session, output to LOG, pid in $RUN/NAME.pid (bash execs CMD)
spawn() {
  local pidf=$RUN/$1.pid log=$2 i; shift 2
  mkdir -p "$RUN"; rm -f "$pidf"
  setsid bash -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$pidf" "$@" >"$log" 2>&1 </dev/null &
  for i in $(seq 1 100); do [ -s "$pidf" ] && return 0; sleep 0.05; done
  die "could not start $pidf"
}

# alive NAME : the process of $RUN/NAME.pid runs
alive() { local p; p=$(cat "$RUN/$1.pid" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

# stop NAME [TIMEOUT_S] : TERM, then KILL after TIMEOUT_S (default 10), the process of $RUN/NAME.pid
stop() {
  local pidf=$RUN/$1.pid t=${2:-10} p i
  p=$(cat "$pidf" 2>/dev/null) || return 0
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill -TERM "$p" 2>/dev/null
    for i in $(seq 1 $((t * 10))); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  fi
  rm -f "$pidf"
}

# wait_for WHAT TIMEOUT_S PROCESS CMD... : until CMD succeeds; dies if PROCESS's pid is gone or time is up
wait_for() {
  local what=$1 t=$2 name=$3 end; shift 3
  end=$((SECONDS + t))
  until "$@" >/dev/null 2>&1; do
    [ -z "$name" ] || alive "$name" || die "$what: $name exited (log: $CONF_HOME/logs/$name.log: $(tail -3 "$CONF_HOME/logs/$name.log" 2>/dev/null))"
    [ $SECONDS -lt $end ] || die "$what: not after ${t}s (log: $CONF_HOME/logs/$name.log)"
    sleep 1
  done
}

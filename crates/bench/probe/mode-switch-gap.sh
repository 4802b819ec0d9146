#!/usr/bin/env bash
# mode-switch-gap.sh ours|upstream [FROM] [TO] — issue 27's figure: restart a proxy from mode FROM (default iptables)
# into mode TO (default nftables) in a fresh network namespace against the shared control plane
# (../shared/tools/control-plane, cluster.sh start, loaded with `kprs-bench api-load --services 1000 --endpoints 1`)
# plus one real Service (namespace gap, see ECHO_YAML below: ClusterIP 10.100.200.200:80 -> 10.244.7.2:8080, a Python
# echo server in a second namespace "pod" behind a veth), and measure:
#   gap          the rules of both modes sampled every ~50 ms (services covered: `-A KUBE-SERVICES ... -j KUBE-SVC-`
#                lines in iptables-legacy-save -t nat while PREROUTING and OUTPUT jump to KUBE-SERVICES (upstream's
#                cleanup removes those jumps first, the chains after); `goto service-` elements of nft map ip kube-proxy service-ips;
#                for ipvs: virtual servers in ipvsadm -Ln) from SIGTERM of the old proxy until 3 s after the new one's
#                first IPv4 sync (its sync_proxy_rules_last_timestamp_seconds); the longest run of samples with 0
#                services covered by either mode (from the first 0 sample to the next non-0 sample), and when the
#                old mode's rules went (first sample without them) relative to the new mode's first sample with any
#   connections a client in the node namespace: LONG (20) long-lived connections to the ClusterIP sending a byte every
#                100 ms, and RATE (100) new connections per second (1 s connect / 1 s echo timeout), from before the
#                SIGTERM to the end; counts of failed new connections (and the span they fall in) and broken long ones
# Upstream runs with iptables* -> iptables-legacy* first in PATH (this host's default is nft); ours with
# --iptables-backend=legacy in both modes. Needs root, python3, socat, nft, iptables-legacy-save.
# Env: CT (set: log conntrack events of the node namespace, with KEEP), KEEP (copy the work directory there: samples,
# traffic events, both proxies' logs), OURS (kube-proxy-rs binary), CP (control-plane dir), RATE, LONG, SETTLE (s between the old proxy's first sync
# and the SIGTERM, 5). Example:
#   OURS=target/release/kube-proxy-rs crates/bench/probe/mode-switch-gap.sh ours iptables nftables
set -uo pipefail
WHO=${1:?ours|upstream}; FROM=${2:-iptables}; TO=${3:-nftables}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
CP=${CP:-/work/shared/tools/control-plane}
KC=${CONTROL_PLANE_HOME:-/var/tmp/kprs-control-plane}/kubeconfig
KUBECTL=${CONTROL_PLANE_HOME:-/var/tmp/kprs-control-plane}/bin/kubectl
RATE=${RATE:-100}; LONG=${LONG:-20}
NS=kprs-gap-node-$WHO; POD=kprs-gap-pod-$WHO
W=$(mktemp -d /tmp/kprs-gap-$WHO.XXXXXX)
LEGACY_BIN=$W/legacy-bin   # iptables* -> iptables-legacy* for upstream
mkdir -p "$LEGACY_BIN"
for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -sf "$(command -v "${t/tables/tables-legacy}")" "$LEGACY_BIN/$t"
done
ECHO_YAML='
apiVersion: v1
kind: Namespace
metadata: {name: gap}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: gap}
spec:
  clusterIP: 10.100.200.200
  ports: [{name: tcp, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: echo-1, namespace: gap, labels: {kubernetes.io/service-name: echo}}
addressType: IPv4
ports: [{name: tcp, port: 8080, protocol: TCP}]
endpoints:
- addresses: [10.244.7.2]
  conditions: {ready: true, serving: true, terminating: false}
  nodeName: bench-node'
echo "$ECHO_YAML" | "$KUBECTL" --kubeconfig "$KC" apply -f - >/dev/null || exit 1

KP=; SERVER=; CLIENT=; SAMPLER=; CTPID=
cleanup() {
  touch "$W/stop"
  for p in $CLIENT $SAMPLER $SERVER $CTPID; do kill "$p" 2>/dev/null; done
  [ -n "$KP" ] && kill -TERM "$KP" 2>/dev/null && wait "$KP" 2>/dev/null
  ip netns del "$POD" 2>/dev/null; ip netns del "$NS" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
ip netns add "$NS" || exit 1
ip netns add "$POD" || exit 1
ip -n "$NS" link set lo up; ip -n "$POD" link set lo up
ip -n "$NS" link add veth-pod type veth peer name eth0 netns "$POD"
ip -n "$NS" addr add 10.244.7.1/24 dev veth-pod; ip -n "$NS" link set veth-pod up
ip -n "$POD" addr add 10.244.7.2/24 dev eth0; ip -n "$POD" link set eth0 up
ip -n "$POD" route add default via 10.244.7.1
# the node's default route (a ClusterIP needs a route before OUTPUT's DNAT): the pod, which does not forward, so a
# connection to a ClusterIP no rule translates goes nowhere (as on a node whose gateway does not know ClusterIPs)
ip -n "$NS" route add default via 10.244.7.2
ip netns exec "$POD" python3 "$HERE/mode-switch-traffic.py" server 8080 &
SERVER=$!

flags() {   # the flags of a proxy in mode $1
  echo --proxy-mode="$1" --hostname-override=bench-node --metrics-bind-address=127.0.0.1:10249 \
    --healthz-bind-address=127.0.0.1:10256 --conntrack-max-per-core=0
  [ "$WHO" = ours ] && echo --iptables-backend=legacy
}
start_proxy() {   # mode $1, log $2
  # shellcheck disable=SC2046
  if [ "$WHO" = ours ]; then
    KP_BIN=${OURS:?kube-proxy-rs binary} "$CP/kp.sh" "$NS" $(flags "$1") >"$2" 2>&1 &
  else
    PATH=$LEGACY_BIN:$PATH "$CP/kp.sh" "$NS" $(flags "$1") >"$2" 2>&1 &
  fi
  KP=$!
}
last_sync() {
  ip netns exec "$NS" curl -s --max-time 1 http://127.0.0.1:10249/metrics |
    awk '$1 == "kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4\"}" { v = $2 } END { printf "%.3f\n", v + 0 }'
}
wait_sync() {   # prints the first IPv4 sync's time
  local s
  for _ in $(seq 1 1200); do
    s=$(last_sync); [ "${s%.*}" -gt 0 ] 2>/dev/null && { echo "$s"; return 0; }
    sleep 0.1
  done
  echo 0; return 1
}
covered() {   # services covered by mode $1's rules
  case $1 in
    iptables) ip netns exec "$NS" iptables-legacy-save -t nat 2>/dev/null | awk '/^-A (PREROUTING|OUTPUT) .*-j KUBE-SERVICES/ { j[$2] = 1 }
        /^-A KUBE-SERVICES .*-j KUBE-SVC-/ { n++ } END { print (j["PREROUTING"] && j["OUTPUT"]) ? n + 0 : 0 }' ;;
    nftables) ip netns exec "$NS" nft list map ip kube-proxy service-ips 2>/dev/null | grep -o 'goto service-' | wc -l ;;
    ipvs) ip netns exec "$NS" ipvsadm -Ln 2>/dev/null | grep -c '^TCP\|^UDP\|^SCTP' ;;
  esac
}
sample() {   # "<unix time> <FROM's services> <TO's services>" every ~50 ms until $W/stop
  while [ ! -e "$W/stop" ]; do
    echo "$(date +%s.%N) $(covered "$FROM") $(covered "$TO")"
    sleep 0.02
  done
}

start_proxy "$FROM" "$W/old.log"
wait_sync >/dev/null || { echo "the $FROM proxy did not sync"; tail -5 "$W/old.log"; exit 1; }
for _ in $(seq 1 300); do [ "$(covered "$FROM")" -gt 1000 ] && break; sleep 0.2; done
ip netns exec "$NS" python3 "$HERE/mode-switch-traffic.py" client 10.100.200.200 80 "$RATE" "$LONG" "$W/stop" "$W/traffic" &
CLIENT=$!
sleep "${SETTLE:-5}"
[ -n "${CT:-}" ] && { ip netns exec "$NS" conntrack -E -p tcp -o timestamp >"$W/conntrack" 2>&1 & CTPID=$!; }
nice -n -10 bash -c "$(declare -f covered sample); NS=$NS W=$W FROM=$FROM TO=$TO sample" >"$W/samples" &
SAMPLER=$!
sleep 1
t_term=$(date +%s.%N)
kill -TERM "$KP"; wait "$KP"; KP=
t_exit=$(date +%s.%N)
# nsbridge.sh's "address already there?" check (ip addr | grep -q under pipefail) can fail by SIGPIPE and then
# trips over the address: give the new proxy's bridge a namespace without it
ip -n "$NS" addr del 198.18.255.1/32 dev lo 2>/dev/null
start_proxy "$TO" "$W/new.log"
t_start=$(date +%s.%N)
t_sync=$(wait_sync) || { echo "the $TO proxy did not sync"; tail -5 "$W/new.log"; }
sleep 3
touch "$W/stop"; wait "$CLIENT" "$SAMPLER"; CLIENT=; SAMPLER=
[ -n "${CTPID:-}" ] && kill "$CTPID" 2>/dev/null
after_term() { echo "$1 - $t_term" | bc -l; }

# the gap: runs of samples (after the SIGTERM) with 0 services covered by either mode
gap=$(awk -v t0="$t_term" '$1 >= t0 {
    if ($2 + $3 == 0) { if (!z) { z = 1; zs = $1 } }
    else if (z) { z = 0; if ($1 - zs > best) { best = $1 - zs; bs = zs; be = $1 } }
    if ($2 == 0 && !oldgone) { oldgone = $1 }
    if ($3 > 0 && !newfirst) { newfirst = $1 }
    n++ }
  END { if (z) { best = -1 }   # still 0 at the end
        if (best > 0) span = sprintf("(%.2f..%.2f_s)", bs - t0, be - t0); else if (best < 0) span = "(not_over_at_the_end)"
        else span = "(no_sample_at_0)"
        printf "%.3f %s %s %s %d\n", best, span, oldgone ? sprintf("%.2f", oldgone - t0) : "never",
          newfirst ? sprintf("%.2f", newfirst - t0) : "never", n }' "$W/samples")
read -r longest gap_span old_gone new_first nsamples <<<"$gap"
interval=$(awk 'NR > 1 { d += $1 - p; n++ } { p = $1 } END { printf "%.0f", 1000 * d / n }' "$W/samples")
# connections
conns=$(awk -v t0="$t_term" '$1 == "new" { n++; if ($3 != "ok") { f++; if (!fs) fs = $2; fe = $2; k[$3]++ } }
  $1 == "long" && $4 == "broken" { b++; if (!bs) bs = $2; k2[$5]++ }
  $1 == "long" && $4 == "alive" { a++ }
  END { kinds = ""; for (x in k) kinds = kinds x ":" k[x] " "
        kinds2 = ""; for (x in k2) kinds2 = kinds2 x ":" k2[x] " "
        printf "new connections %d, failed %d%s | long-lived alive %d, broken %d%s",
          n, f, f ? sprintf(" (%sfrom %+.2f s to %+.2f s)", kinds, fs - t0, fe - t0) : "",
          a, b, b ? sprintf(" (%sfirst %+.2f s)", kinds2, bs - t0) : "" }' "$W/traffic")
printf '%s %s->%s: exit %.2f s, new proxy started %.2f s, its first IPv4 sync %.2f s after SIGTERM | longest 0-services gap %.2f s %s | %s rules gone at %s s, first %s service at %s s | %s samples, every %s ms | %s | load %s\n' \
  "$WHO" "$FROM" "$TO" "$(after_term "$t_exit")" "$(after_term "$t_start")" "$(after_term "$t_sync")" \
  "$longest" "${gap_span//_/ }" "$FROM" "$old_gone" "$TO" "$new_first" "$nsamples" "$interval" "$conns" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "${KEEP:-}" ] && cp -r "$W" "$KEEP"
exit 0

#!/usr/bin/env bash
# compare-api.sh ours|upstream LABEL — one run of a proxy (iptables mode, legacy backend, default flags) against the
# shared control plane (../shared/tools/control-plane, loaded with `kprs-bench api-load`), in a fresh network namespace
# with IPv6 enabled (dual-stack), timed from its own /metrics only:
#   start -> rules   the IPv4 family's first sync_proxy_rules_last_timestamp_seconds after the start (both label it),
#                    with that first sync's own sync_proxy_rules_duration_seconds
#   change -> rules  `kprs-bench api-change` (prints the change's time), then the first last_timestamp after it,
#                    with the IPv4 sync durations added meanwhile
#   sync durations   sync_proxy_rules_duration_seconds sum/count; network_programming_duration_seconds sum/count
#   failures         sync_proxy_rules_iptables_restore_failures_total, and the log's failed syncs
#   peak RSS         VmHWM of the proxy at the end (the proxy process itself: restore children not counted, as for upstream)
# Env: OURS (kube-proxy-rs binary), BENCH (kprs-bench binary), CP (control-plane dir), SETTLE (s after the first sync, 20).
set -uo pipefail
WHO=${1:?ours|upstream}; LABEL=${2:-1}
CP=${CP:-/work/shared/tools/control-plane}
KC=${CONTROL_PLANE_HOME:-/var/tmp/kprs-control-plane}/kubeconfig
BENCH=${BENCH:?kprs-bench binary}
NS=kprs-cmp-$WHO-$LABEL
LOG=/tmp/$NS.log
LEGACY_BIN=/tmp/kprs-cmp-legacy-bin   # iptables* -> iptables-legacy* for upstream (this host's default is nft)
mkdir -p "$LEGACY_BIN"
for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -sf "$(command -v "${t/tables/tables-legacy}")" "$LEGACY_BIN/$t"
done
ip netns add "$NS" || exit 1
ip -n "$NS" link set lo up
cleanup() { [ -n "${KP:-}" ] && kill -TERM "$KP" 2>/dev/null && wait "$KP" 2>/dev/null; ip netns del "$NS" 2>/dev/null; }
trap cleanup EXIT
flags=(--proxy-mode=iptables --hostname-override=bench-node --metrics-bind-address=127.0.0.1:10249
       --healthz-bind-address=127.0.0.1:10256 --conntrack-max-per-core=0)
metrics() { ip netns exec "$NS" curl -s --max-time 2 http://127.0.0.1:10249/metrics; }
# the IPv4 family's value of metric $1
value() { metrics | awk -v m="$1{ip_family=\"IPv4\"}" '$1 == m { v = $2 } END { printf "%.3f\n", v + 0 }'; }
per_family() { metrics | awk -v m="$1" 'index($1, m) == 1 { print $1, $2 }'; }
t0=$(date +%s.%N)
if [ "$WHO" = ours ]; then
  KP_BIN=${OURS:?kube-proxy-rs binary} "$CP/kp.sh" "$NS" "${flags[@]}" --iptables-backend=legacy >"$LOG" 2>&1 &
else
  PATH=$LEGACY_BIN:$PATH "$CP/kp.sh" "$NS" "${flags[@]}" >"$LOG" 2>&1 &
fi
KP=$!
first=0
for _ in $(seq 1 1200); do
  first=$(value kubeproxy_sync_proxy_rules_last_timestamp_seconds)
  [ "${first%.*}" -gt 0 ] 2>/dev/null && break
  sleep 0.25
done
start_to_rules=$(echo "$first - $t0" | bc -l)
first_sync=$(value kubeproxy_sync_proxy_rules_duration_seconds_sum)   # the IPv4 family's first sync alone
sleep "${SETTLE:-20}"
before=$(value kubeproxy_sync_proxy_rules_last_timestamp_seconds)
d_before=$(value kubeproxy_sync_proxy_rules_duration_seconds_sum); n_before=$(value kubeproxy_sync_proxy_rules_duration_seconds_count)
families=$(per_family kubeproxy_sync_proxy_rules_last_timestamp_seconds | tr '\n' ' ')
change=$("$BENCH" api-change --kubeconfig "$KC")
at=$(echo "$change" | sed -n 's/.* at \([0-9.]*\) .*/\1/p')
applied=0
for _ in $(seq 1 600); do
  applied=$(value kubeproxy_sync_proxy_rules_last_timestamp_seconds)
  [ "$(echo "$applied > $at" | bc -l)" = 1 ] && break
  sleep 0.05
done
change_to_rules=$(echo "$applied - $at" | bc -l)
d_after=$(value kubeproxy_sync_proxy_rules_duration_seconds_sum); n_after=$(value kubeproxy_sync_proxy_rules_duration_seconds_count)
change_sync=$(echo "$d_after - $d_before" | bc -l); change_syncs=$(echo "$n_after - $n_before" | bc -l)
sleep 3
# the proxy: the process in the namespace running the proxy's binary (ours: $OURS, whatever its name; upstream: a
# kube-proxy binary), not a restore child (ours re-executes itself as `kube-proxy-rs xtables-restore`)
want=$([ "$WHO" = ours ] && readlink -f "$OURS")
pid=$(for p in $(ip netns pids "$NS"); do
        exe=$(readlink -f "/proc/$p/exe" 2>/dev/null) || continue
        tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q xtables-restore && continue
        if [ -n "$want" ]; then [ "$exe" = "$want" ] && echo "$p"; else case ${exe##*/} in kube-proxy*) echo "$p";; esac; fi
      done | head -1)
hwm=$(awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$pid/status" 2>/dev/null)
m=$(metrics)
sum() { echo "$m" | awk -v m="$1" 'index($1, m) == 1 { v += $2 } END { printf "%.3f", v + 0 }'; }
fails=$(sum kubeproxy_sync_proxy_rules_iptables_restore_failures_total)
logged=$(grep -ciE "sync failed|Failed to execute iptables-restore|Sync failed|xtables.lock" "$LOG")
printf '%s run %s: start->rules %.2f s (IPv4 first sync %.2f s) | change->rules %.3f s (IPv4 sync %.3f s over %s syncs) | sync duration sum/count %s/%s | netprog sum/count %s/%s | restore failures %s, failed syncs logged %s | peak RSS %s MiB | last per family: %s| %s\n' \
  "$WHO" "$LABEL" "$start_to_rules" "$first_sync" "$change_to_rules" "$change_sync" "${change_syncs%.*}" \
  "$(sum kubeproxy_sync_proxy_rules_duration_seconds_sum)" "$(sum kubeproxy_sync_proxy_rules_duration_seconds_count)" \
  "$(sum kubeproxy_network_programming_duration_seconds_sum)" "$(sum kubeproxy_network_programming_duration_seconds_count)" \
  "$fails" "$logged" "$hwm" "$families" "$change"

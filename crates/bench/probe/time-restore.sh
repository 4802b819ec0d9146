#!/bin/sh
# time-restore.sh BACKEND FILE...   (BACKEND: legacy or nft; needs root)
# Per FILE (an iptables-restore input), in a fresh network namespace kprs-probe-PID that is deleted
# afterwards (also on error or Ctrl-C): restore into empty tables, then the same input again (the
# chains exist: flushed and refilled, as a proxy's later full syncs do). Prints wall / user / sys
# seconds, and leaves FILE.BACKEND.saved (iptables-save, counters stripped, sorted) to compare variants.
set -u
b=$1; shift
ns=kprs-probe-$$
trap 'ip netns del $ns 2>/dev/null' EXIT
trap 'exit 130' INT TERM
for f in "$@"; do
  ip netns add $ns && ip -n $ns link set lo up || exit 1
  for pass in first again; do
    /usr/bin/time -f "$b $(basename "$f") $pass: %e s wall (user %U, sys %S)" \
      ip netns exec $ns iptables-$b-restore --noflush < "$f" || echo "FAILED: $f"
  done
  ip netns exec $ns iptables-$b-save | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]//' | sort > "$f.$b.saved"
  ip netns del $ns
done

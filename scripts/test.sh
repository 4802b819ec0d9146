#!/usr/bin/env bash
# The README's test command: installs what the tests need (as root, from
# Debian's packages), then runs every test of the workspace, kernel-facing
# ones included (they make and delete their own network namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(iptables nftables ipset conntrack iproute2 nfacct procps)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "missing packages (${missing[*]}); run as root to install them" >&2
  fi
fi

export INSTA_UPDATE=no

# The release builds of the fuzz targets and of the image's binary (and the
# image's Debian root file system) start now, beside the tests, at the lowest
# CPU priority (SCHED_IDLE): they take only what the tests leave idle — the
# serial IPVS VM suites leave much of a core — and the fuzz and image steps
# below then find them built. They share nothing with the tests' build
# (cargo locks target/debug and target/release apart). A failure here shows
# again below, where the step builds for itself.
prepare_log=$(mktemp)
prepare() {
  local idle=(nice -n 19)
  command -v chrt >/dev/null && idle+=(chrt --idle 0)
  local started=$SECONDS
  if [ "$(id -u)" = 0 ]; then "${idle[@]}" bash scripts/image.sh --prepare || return 1; fi
  FUZZ_BUILD_ONLY=1 "${idle[@]}" bash scripts/fuzz.sh || return 1
  echo "release builds (image, fuzz targets) done beside the tests in $((SECONDS - started)) s"
}
# In a process group of its own (setsid), so that it can be raised below.
setsid bash -c "$(declare -f prepare); prepare" >"$prepare_log" 2>&1 &
prepare_pid=$!

# Once the tests are done, the release builds (if still running) take the
# normal priority back: at SCHED_IDLE they get nothing on a machine that
# other work keeps busy. Twice, for processes forked during the first pass.
prepare_group() {
  local group
  group=$(ps -o pgid= -p "$prepare_pid" | tr -d ' ')
  [ -n "$group" ] && [ "$group" != "$(ps -o pgid= -p $$ | tr -d ' ')" ] && echo "$group"
}
raise_prepare() {
  local group p
  group=$(prepare_group) || return 0
  for _ in 1 2; do
    for p in $(pgrep -g "$group"); do
      chrt --other -p 0 "$p" && renice -n 0 -p "$p"
    done >/dev/null 2>&1
  done
}
# Interrupted or failed, the command takes the builds down with it.
trap 'group=$(prepare_group) && pkill -g "$group" 2>/dev/null; true' EXIT

tests=0
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast "$@" || tests=$?
  cargo test --workspace --doc || tests=$?
else
  cargo test --workspace --no-fail-fast "$@" || tests=$?
fi

waited=$SECONDS
raise_prepare
wait "$prepare_pid" || echo "the release builds beside the tests failed (the steps below build again):"
echo "waited $((SECONDS - waited)) s for the release builds beside the tests; their output:"
grep -v '^ *Compiling ' "$prepare_log" || true
rm -f "$prepare_log"
[ "$tests" = 0 ] || exit "$tests"

# Every fuzz target of fuzz/ for a bounded time (scripts/fuzz.sh, built
# above; it fails on a crash).
bash scripts/fuzz.sh

# The container image (scripts/image.sh builds it and checks its binary).
if [ "$(id -u)" = 0 ]; then
  bash scripts/image.sh
else
  echo "scripts/image.sh needs root: not run" >&2
  exit 1
fi

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

# Disk (docs/testing.md, "Disk"): fresh builds gain nothing from incremental
# compilation, whose caches were a third of the tests' build directory.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
. scripts/target-dir.sh
target_dir=$(cargo_target_dir)
mkdir -p "$target_dir"
free_gib() { df -Pk "$target_dir" | awk 'NR == 2 { printf "%d", $4 / 1048576 }'; }
# What the three builds take at once, measured cold (docs/testing.md):
# the tests' 2.8 GiB, the image's binary and root file system, the fuzz
# targets, and room to link.
need_gib=${KPRS_BUILDS_GIB:-8}
beside=1
if [ "$(free_gib)" -lt "$need_gib" ]; then beside=0; fi
echo "disk: $(free_gib) GiB free where cargo builds ($target_dir); the builds at once need about $need_gib GiB:" \
  "$([ "$beside" = 1 ] && echo "release builds beside the tests" || echo "release builds after the tests, the tests' build removed first")"

# The release builds of the fuzz targets and of the image's binary (and the
# image's Debian root file system) start now, beside the tests, at the lowest
# CPU priority (SCHED_IDLE): they take only what the tests leave idle — the
# serial IPVS VM suites leave much of a core — and the fuzz and image steps
# below then find them built. They share nothing with the tests' build
# (cargo locks target/debug and target/release apart). A failure here shows
# again below, where the step builds for itself. On a disk too small for
# all three builds at once, they wait for the tests instead (see above).
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
prepare_pid=
if [ "$beside" = 1 ]; then
  setsid bash -c "$(declare -f prepare); prepare" >"$prepare_log" 2>&1 &
  prepare_pid=$!
fi

# Once the tests are done, the release builds (if still running) take the
# normal priority back: at SCHED_IDLE they get nothing on a machine that
# other work keeps busy. Twice, for processes forked during the first pass.
prepare_group() {
  local group
  [ -n "$prepare_pid" ] || return 1
  group=$(ps -o pgid= -p "$prepare_pid" | tr -d ' ')
  [ -n "$group" ] && [ "$group" != "$(ps -o pgid= -p $$ | tr -d ' ')" ] && echo "$group"
}
raise_prepare() {
  local group p
  group=$(prepare_group) || return 0
  for _ in 1 2; do
    for p in $(pgrep -g "$group"); do
      # a process may end meanwhile: not a failure (set -e)
      { chrt --other -p 0 "$p" && renice -n 0 -p "$p"; } || true
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

if [ -n "$prepare_pid" ]; then
  waited=$SECONDS
  raise_prepare
  wait "$prepare_pid" || echo "the release builds beside the tests failed (the steps below build again):"
  echo "waited $((SECONDS - waited)) s for the release builds beside the tests; their output:"
  grep -v '^ *Compiling ' "$prepare_log" || true
fi
rm -f "$prepare_log"
echo "disk after the tests: $(du -sh "$target_dir/debug" 2>/dev/null | cut -f1) in the tests' build, $(free_gib) GiB free"
[ "$tests" = 0 ] || exit "$tests"
if [ "$beside" = 0 ]; then
  rm -rf "$target_dir/debug"
  echo "disk: the tests' build removed for the release builds, $(free_gib) GiB free"
fi

# Every fuzz target of fuzz/ for a bounded time (scripts/fuzz.sh, built
# above; it fails on a crash).
bash scripts/fuzz.sh

# The container image (scripts/image.sh builds it and checks its binary).
if [ "$(id -u)" = 0 ]; then
  bash scripts/image.sh
  echo "disk at the end: $(free_gib) GiB free where cargo builds"
else
  echo "scripts/image.sh needs root: not run" >&2
  exit 1
fi

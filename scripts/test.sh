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
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast "$@"
  cargo test --workspace --doc
else
  cargo test --workspace --no-fail-fast "$@"
fi

# Every fuzz target of fuzz/ for a bounded time (scripts/fuzz.sh builds them,
# installing cargo-fuzz when missing, and fails on a crash).
bash scripts/fuzz.sh

# The container image (scripts/image.sh builds it and checks its binary).
if [ "$(id -u)" = 0 ]; then
  bash scripts/image.sh
else
  echo "scripts/image.sh needs root: not run" >&2
  exit 1
fi

#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (see fuzz/README.md) for a bounded time on
# stable Rust, as the test command does: builds them as
# `cargo fuzz build -s none --codegen-units 16` builds them (cargo-fuzz is
# not needed: see build_targets), then runs each built libFuzzer binary for
# FUZZ_SECONDS (12 by default), two at a time, from the committed seed corpus
# fuzz/corpus/<target> (new inputs go to fuzz/target/corpus/<target>, kept
# between runs). Prints the executions per target; fails on the first crash,
# leaving the input in fuzz/artifacts/<target>/ (replay it: <cargo's target
# directory, fuzz/target unless CARGO_TARGET_DIR says otherwise>/x86_64-unknown-linux-gnu/release/<target> FILE).
#
#   FUZZ_BUILD_ONLY=1 scripts/fuzz.sh   builds the targets and stops
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
. ../scripts/target-dir.sh
seconds="${FUZZ_SECONDS:-12}"

TRIPLE=x86_64-unknown-linux-gnu

# The fuzz targets, as `cargo fuzz list` names them: the [[bin]] names of
# fuzz/Cargo.toml, sorted.
targets() {
  awk '/^\[\[bin\]\]/ { bin = 1; next } /^\[/ { bin = 0 } bin && /^name *=/ { gsub(/"/, "", $3); print $3 }' Cargo.toml | LC_ALL=C sort
}

# The build `cargo fuzz build -s none --codegen-units 16` runs (cargo-fuzz
# 0.13's src/project.rs, `cargo()`, for x86_64 Linux with its defaults:
# libFuzzer's sanitizer coverage, `--cfg fuzzing`, debug assertions, no
# sanitizer), without installing cargo-fuzz from source first (89 s on 2
# cores). The same flags make the same build: run after cargo-fuzz's own
# build, cargo finds every target fresh.
build_targets() {
  local flags=(
    -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing
    -Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Cllvm-args=-sanitizer-coverage-stack-depth
    -Cdebug-assertions -Ccodegen-units=16
  )
  RUSTFLAGS="${flags[*]}${RUSTFLAGS:+ $RUSTFLAGS}" cargo build --manifest-path "$PWD/Cargo.toml" \
    --target "$TRIPLE" --release --config 'profile.release.debug="line-tables-only"' --bins
}

started=$SECONDS
build_targets
echo "fuzz targets built in $((SECONDS - started)) s"
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0
bin="$(cargo_target_dir)/$TRIPLE/release"

# run TARGET: fuzzes it for $seconds; prints its executions or its crash.
run() {
  local target=$1 log=target/$1.log
  mkdir -p "target/corpus/$target" "artifacts/$target"
  if ! "$bin/$target" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="artifacts/$target/" "target/corpus/$target" "corpus/$target" >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz target $target FAILED (input in fuzz/artifacts/$target/)"
    return 1
  fi
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  printf 'fuzz %-18s %9s executions in %s s (%s inputs in corpus)\n' "$target" "$execs" "$seconds" \
    "$(find "target/corpus/$target" "corpus/$target" -type f | wc -l)"
}

# The flags and config-file targets write their input to a file per process.
export TMPDIR="$PWD/target/tmp"
mkdir -p "$TMPDIR"
started=$SECONDS
mapfile -t targets < <(targets)
failed=0
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pids=()
  for target in "${targets[@]:i:2}"; do
    run "$target" & pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
done
echo "fuzzed ${#targets[@]} targets in $((SECONDS - started)) s"
exit "$failed"

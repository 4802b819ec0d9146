#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (see fuzz/README.md) for a bounded time on
# stable Rust, as the test command does: builds them with
# `cargo fuzz build -s none` (installing cargo-fuzz first when it is
# missing), then runs each built libFuzzer binary for FUZZ_SECONDS (12 by
# default), two at a time, from the committed seed corpus fuzz/corpus/<target>
# (new inputs go to fuzz/target/corpus/<target>, kept between runs). Prints
# the executions per target; fails on the first crash, leaving the input in
# fuzz/artifacts/<target>/ (replay it: <cargo's target directory, fuzz/target
# unless CARGO_TARGET_DIR says otherwise>/x86_64-unknown-linux-gnu/release/<target> FILE).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
. ../scripts/target-dir.sh
seconds="${FUZZ_SECONDS:-12}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  started=$SECONDS
  echo "installing cargo-fuzz (cargo install --locked cargo-fuzz)"
  cargo install --locked cargo-fuzz
  echo "cargo-fuzz installed in $((SECONDS - started)) s"
fi

started=$SECONDS
cargo fuzz build -s none --codegen-units 16
echo "fuzz targets built in $((SECONDS - started)) s"
bin="$(cargo_target_dir)/x86_64-unknown-linux-gnu/release"

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
mapfile -t targets < <(cargo fuzz list)
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

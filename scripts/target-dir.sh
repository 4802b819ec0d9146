# Sourced by the scripts that build or run binaries: cargo_target_dir prints
# the directory cargo builds into for the workspace of the current folder —
# CARGO_TARGET_DIR, build.target-dir of a .cargo/config.toml, or the
# workspace's own target/ — as cargo itself reports it. The scripts' own
# work files (image cache, fuzz corpus and logs) stay where they are.
cargo_target_dir() {
  local metadata dir
  metadata=$(cargo metadata --format-version 1 --no-deps) || return 1
  dir=$(printf '%s' "$metadata" | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  [ -n "$dir" ] || { echo "cargo metadata names no target_directory" >&2; return 1; }
  printf '%s\n' "$dir"
}

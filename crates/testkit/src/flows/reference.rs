//! Where the reference corpus lives.

use anyhow::{Context, Result};
use std::path::PathBuf;

/// Environment variable that overrides the reference directory.
pub const REFERENCE_DIR_ENV: &str = "KPRS_REFERENCE_DIR";

/// The upstream v1.36 reference corpus: `$KPRS_REFERENCE_DIR`, else
/// `testdata/upstream-v1.36` in the repository.
pub fn reference_dir() -> PathBuf {
    match std::env::var_os(REFERENCE_DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/upstream-v1.36"),
    }
}

/// Reads `relative` (e.g. `iptables/iptables-save.txt`) from the
/// reference directory.
pub fn read_reference(relative: &str) -> Result<String> {
    let path = reference_dir().join(relative);
    std::fs::read_to_string(&path)
        .with_context(|| format!("read reference file {} (set {REFERENCE_DIR_ENV} to move it)", path.display()))
}

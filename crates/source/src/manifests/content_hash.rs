//! A hash of the manifests file's content that can be taken while the
//! file streams through a small buffer, so a poll that finds the file
//! rewritten with the same content (or a racy stamp) costs no copy of a
//! file of tens of MiB. SHA-256 (its first 64 bits): the same value
//! whether fed the whole text at once or in pieces, and fast with the
//! CPU's SHA instructions (12 MiB in a few ms).

use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// How much of the file is read at a time.
const CHUNK: usize = 64 * 1024;

fn finish(hasher: Sha256) -> u64 {
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(digest.get(..8).unwrap_or(&[0; 8]));
    u64::from_le_bytes(first)
}

/// The hash of a text held whole.
#[cfg(test)]
pub(super) fn hash_text(text: &str) -> u64 {
    finish(Sha256::new_with_prefix(text.as_bytes()))
}

/// [`hash_text`] of a text given piece by piece.
#[derive(Default)]
pub(super) struct ContentHasher(Sha256);

impl ContentHasher {
    pub(super) fn update(&mut self, piece: &str) {
        self.0.update(piece.as_bytes());
    }

    pub(super) fn finish(self) -> u64 {
        finish(self.0)
    }
}

/// The hash of the file at `path`, read `CHUNK` bytes at a time; equal
/// to [`hash_text`] of its content.
pub(super) fn hash_file(path: &Path) -> std::io::Result<u64> {
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0; CHUNK];
    let mut hasher = Sha256::new();
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(finish(hasher)),
            Ok(n) => hasher.update(buf.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_file_streamed_hashes_as_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.yaml");
        let text: String = (0..40_000).map(|i| format!("line {i}\n")).collect();
        assert!(text.len() > 2 * CHUNK);
        std::fs::write(&path, &text).unwrap();
        assert_eq!(hash_file(&path).unwrap(), hash_text(&text));
        let mut pieces = ContentHasher::default();
        text.split_inclusive('\n').for_each(|line| pieces.update(line));
        assert_eq!(pieces.finish(), hash_text(&text));
        let changed = text.replacen("line 39999", "line 39998", 1);
        assert_ne!(hash_text(&changed), hash_text(&text));
    }

    #[test]
    fn a_missing_file_is_an_error() {
        assert!(hash_file(Path::new("/nonexistent/kprs/m.yaml")).is_err());
    }
}

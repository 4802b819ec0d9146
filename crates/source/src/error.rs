//! Errors of the sources.

use std::path::PathBuf;

/// A source could not deliver a state.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The manifests are not YAML at all (syntax error); `origin` is the
    /// file (or `<manifests>` for text), the message carries line/column.
    #[error("{origin}: not valid YAML: {message}")]
    NotYaml {
        /// The file the text came from.
        origin: String,
        /// The YAML parser's message, with line and column.
        message: String,
    },
    /// A document is YAML but not a mapping (e.g. plain text), so the file
    /// is not a manifests file.
    #[error("{origin}: document at line {line} is not a Kubernetes object (a mapping) but {found}")]
    NotAnObject {
        /// The file the text came from.
        origin: String,
        /// First line of the document (1-based).
        line: usize,
        /// What was found instead (`a string`, `a list`, ...).
        found: &'static str,
    },
    /// The manifests file could not be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

//! The manifests file source: a multi-document YAML stream (or a
//! `kind: List`, as `kubectl get -o yaml` prints) of v1 Services,
//! discovery.k8s.io/v1 EndpointSlices and v1 Nodes.
//!
//! Documents of other kinds (Namespace, ServiceCIDR, ...) are ignored. A
//! document of one of our kinds that does not decode is skipped with one
//! warning naming it; the rest is kept. Text that is not YAML at all is an
//! [`Error`]. What the objects mean is the tracker's business: feed
//! [`Parsed::objects`] to [`tracker::Tracker::replace_all`].

mod decode;
mod split;
mod watch;

use crate::Error;
use std::fmt;
use std::path::Path;
use tracker::{ObjectKind, Objects};

pub use watch::{DEFAULT_POLL, Watch, watch};

/// One state read from a manifests file.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// The Services, EndpointSlices and Nodes that decoded.
    pub objects: Objects,
    /// Documents of our kinds that were skipped (each also logged once).
    pub warnings: Vec<Warning>,
}

/// A document of a kind the proxy reads that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The document's kind.
    pub kind: ObjectKind,
    /// `metadata.namespace` as written (empty if none).
    pub namespace: String,
    /// `metadata.name` as written (empty if none).
    pub name: String,
    /// First line of the document in the file (1-based).
    pub line: usize,
    /// What is wrong (serde's message, or an unsupported apiVersion).
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let object = tracker::object_label(self.kind, &self.namespace, &self.name);
        write!(
            f,
            "{object} (document at line {}): {}; skipped",
            self.line, self.message
        )
    }
}

/// Parses manifests text. Errors name the origin `<manifests>`.
pub fn parse(text: &str) -> Result<Parsed, Error> {
    decode::parse_named("<manifests>", text)
}

/// Reads and parses the manifests file at `path`; errors name the path.
pub fn load(path: impl AsRef<Path>) -> Result<Parsed, Error> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    decode::parse_named(&path.display().to_string(), &text)
}

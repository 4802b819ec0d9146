//! The manifests file source: a multi-document YAML stream (or a
//! `kind: List`, as `kubectl get -o yaml` prints) of v1 Services,
//! discovery.k8s.io/v1 EndpointSlices, v1 Nodes and networking.k8s.io/v1
//! ServiceCIDRs.
//!
//! Documents of other kinds (Namespace, ...) are ignored. A
//! document of one of our kinds that does not decode is skipped with one
//! warning naming it; the rest is kept. Text that is not YAML at all is an
//! [`Error`], and then nothing of the file is used.
//!
//! Memory: the proxy never holds the decoded file. A read is [`Checked`]
//! first (every document read and dropped), then its objects are decoded
//! a few at a time and handed to the tracker as they come ([`Held`], driven
//! by [`run`]), each document's text freed once it is decoded, so a
//! read costs at most about the file's text and a few batches of objects
//! beside the tracker (at 100,000 services × 1 endpoint, 50 MiB of text). A file is
//! read line by line, never whole, and a re-read keeps the text of its
//! new documents only (those of the last read are known by their hash). [`parse`]
//! and [`load`] collect every object instead: for tests and small files.
//!
//! Speed: a re-read checks and decodes only the documents whose text is
//! new (each document is hashed; [`Held`] keeps, per hash, the keys of
//! the objects it gave); the objects of unchanged documents are not fed
//! to the tracker again.

mod content_hash;
mod decode;
mod held_key;
mod object;
mod pipeline;
mod plain_yaml;
mod replace;
mod split;
mod wake;
mod watch;

use crate::Error;
use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use k8s_openapi::api::core::v1::Node;
use tracker::{ObjectKind, Objects};

pub use object::Object;
pub use replace::{Held, Known, Replaced};
pub use watch::{DEFAULT_POLL, Watch, run, watch};

/// One state read from a manifests file.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// The Services, EndpointSlices, Nodes and ServiceCIDRs that decoded.
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

/// Manifests text known to be a YAML stream of mappings: decoding it can
/// no longer fail as a whole (a document of our kinds that does not decode
/// is still skipped with its warning), so handing its objects on one at a
/// time changes nothing when the file is bad. It carries a hash of each
/// document, so a re-read decodes only the documents that changed.
///
/// Each document has its own copy of its text (the file's text is freed
/// as it is cut, or never held whole when read from a file): [`Held::replace`]
/// frees each document once it is in the tracker, so a large file's text
/// and the objects made from it are never held whole at once.
#[derive(Debug, Clone)]
pub struct Checked {
    origin: String,
    /// The file the documents were read from, when their text is not
    /// all held (see [`Checked::read_after`]).
    file: Option<PathBuf>,
    /// The documents whose text is held, in file order: all of them, but
    /// for a read after an earlier one.
    documents: Vec<split::OwnedDocument>,
    /// Every document's hash, in file order.
    hashes: Vec<u64>,
}

/// A file read line by line and checked.
#[derive(Debug)]
pub struct FileRead {
    /// The hash of its content.
    pub hash: u64,
    /// Its documents, or why the file is not usable.
    pub checked: Result<Checked, Error>,
}

impl Checked {
    /// Checks `text` read from `origin` (a path, or `<manifests>`).
    pub fn new(origin: impl Into<String>, text: String) -> Result<Self, Error> {
        Self::new_after(origin, text, &Known::default())
    }

    /// Checks `text` read from `origin`, skipping the documents of an
    /// earlier read that passed ([`Held::known`]): they are the same text.
    pub fn new_after(
        origin: impl Into<String>,
        text: String,
        known: &Known,
    ) -> Result<Self, Error> {
        let origin = origin.into();
        let documents = split::into_documents(text);
        let hashes = documents
            .iter()
            .map(|doc| {
                let doc = doc.as_document();
                let hash = split::hash_document(&doc);
                if !known.contains(hash) {
                    decode::check_document(&origin, &doc)?;
                }
                Ok(hash)
            })
            .collect::<Result<_, Error>>()?;
        Ok(Self {
            origin,
            file: None,
            documents,
            hashes,
        })
    }

    /// Reads the file at `path` line by line (its text is never held
    /// whole) and checks the documents not in `known`, keeping only their
    /// text: the documents of an earlier read are the same text, and
    /// [`Held::replace`] reads them again from the file in the rare case
    /// it needs one. The file is read to its end even when a document
    /// fails, for the hash of its content. An error only when the file
    /// cannot be read.
    pub fn read_after(path: &Path, known: &Known) -> Result<FileRead, Error> {
        let read_err = |source| Error::Read {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(read_err)?;
        let origin = path.display().to_string();
        let mut read = split::ReadDocuments::new(std::io::BufReader::new(file));
        // about as many documents as last time: the vector does not grow
        // twice over
        let mut hashes = Vec::with_capacity(known.len() + known.len() / 16);
        let mut documents = Ok(Vec::new());
        // cut and hashed on one thread, the new ones checked on this one
        let reading = pipeline::two_stages(
            |give| {
                for doc in read.by_ref() {
                    let doc = doc?;
                    let hash = split::hash_document(&doc.as_document());
                    if !known.contains(hash) {
                        give.give(doc);
                    }
                    hashes.push(hash);
                }
                Ok(read.hasher().finish())
            },
            |doc| {
                if let Ok(kept) = &mut documents {
                    match decode::check_document(&origin, &doc.as_document()) {
                        Ok(()) => kept.push(doc),
                        Err(err) => documents = Err(err),
                    }
                }
            },
        );
        let hash = reading.map_err(read_err)?;
        let checked = documents.map(|documents| Self {
            origin,
            file: Some(path.to_path_buf()),
            documents,
            hashes,
        });
        Ok(FileRead { hash, checked })
    }

    /// The held document at `position`, if its text is held.
    fn document_at(&self, position: usize) -> Option<&split::OwnedDocument> {
        let index = self.documents.binary_search_by_key(&position, |d| d.position()).ok()?;
        self.documents.get(index).filter(|d| d.has_text())
    }

    /// The text of the documents at `positions` whose text is not held,
    /// read again from the file: each only if it still hashes as it did
    /// (a file rewritten meanwhile is read again whole at the next poll).
    fn reread(&self, positions: &HashSet<usize>) -> Vec<split::OwnedDocument> {
        let Some(path) = &self.file else {
            return Vec::new();
        };
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(err) => {
                tracing::warn!(path = %path.display(), "reading the manifests again: {err}");
                return Vec::new();
            }
        };
        split::ReadDocuments::new(std::io::BufReader::new(file))
            .map_while(Result::ok)
            .filter(|doc| {
                let position = doc.position();
                positions.contains(&position)
                    && self.hashes.get(position) == Some(&split::hash_document(&doc.as_document()))
            })
            .collect()
    }

    /// Where the text came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Decodes the Services, EndpointSlices, Nodes and ServiceCIDRs one at a time and
    /// hands each to `emit`, in file order; returns the documents skipped.
    pub fn for_each_object(&self, mut emit: impl FnMut(Object)) -> Vec<Warning> {
        self.documents
            .iter()
            .flat_map(|doc| decode::decode_one(&self.origin, &doc.as_document(), &mut emit))
            .collect()
    }

    /// [`Checked::for_each_object`] of only the Nodes, decoding only the
    /// documents whose text names the kind `Node` (or escapes characters,
    /// so it might spell it otherwise): the proxy's start-up reads its
    /// Node's addresses so, without decoding every object of a large file
    /// (seconds at 100,000 services).
    pub fn for_each_node(&self, mut emit: impl FnMut(Node)) {
        for doc in &self.documents {
            let doc = doc.as_document();
            if !doc.text.contains("Node") && !doc.text.contains('\\') {
                continue;
            }
            decode::decode_one(&self.origin, &doc, &mut |object| {
                if let Object::Node(node) = object {
                    emit(node);
                }
            });
        }
    }
}

/// Parses manifests text into every object at once. Errors name the
/// origin `<manifests>`.
pub fn parse(text: &str) -> Result<Parsed, Error> {
    parse_named("<manifests>", text)
}

/// Reads and parses the manifests file at `path` into every object at
/// once; errors name the path.
pub fn load(path: impl AsRef<Path>) -> Result<Parsed, Error> {
    let checked = read(path)?;
    let mut objects = Objects::default();
    let warnings = checked.for_each_object(|object| object.push_to(&mut objects));
    Ok(Parsed { objects, warnings })
}

/// Reads the manifests file at `path` and checks it; errors name the path.
pub fn read(path: impl AsRef<Path>) -> Result<Checked, Error> {
    Checked::read_after(path.as_ref(), &Known::default())?.checked
}

fn parse_named(origin: &str, text: &str) -> Result<Parsed, Error> {
    decode::check(origin, text)?;
    Ok(collect(origin, text))
}

/// Every object of checked `text`.
fn collect(origin: &str, text: &str) -> Parsed {
    let mut objects = Objects::default();
    let warnings = decode::decode_each(origin, text, &mut |object| object.push_to(&mut objects));
    Parsed { objects, warnings }
}

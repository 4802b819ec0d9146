//! Making a read of the file the tracker's whole state, one object at a
//! time, as a re-list does: each object of a new document goes into the
//! tracker as it is decoded and is dropped; at the end, what the previous
//! read held and this one no longer shows is deleted. Between reads only
//! the keys of each document's objects are kept, by the document's hash:
//! a document read before (same text) is neither decoded nor fed to the
//! tracker again. Each key is allocated once and shared by every index
//! of a read ([`HeldKey`]); each new document's text is freed as soon as
//! its objects are in the tracker.

use super::held_key::{HeldKey, Keys};
use super::object::{Object, delete};
use super::{Checked, decode};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tracker::{ObjectKind, Tracker};


/// What one document gave, by its hash.
#[derive(Debug, Clone, Default)]
struct Document {
    /// Its objects, in order.
    keys: Keys,
    /// Its objects of our kinds that did not decode.
    skipped: usize,
}

/// The documents of the last read the tracker was given.
#[derive(Debug, Default)]
pub struct Held {
    documents: HashMap<u64, Document>,
    /// Called after every [`RELEASE_STEP`] of document text freed.
    release: Option<fn()>,
}

/// How much document text a read frees between two calls of the release
/// hook ([`Held::releasing_with`]). 8 MiB until stop 36: the read's peak
/// RSS at 100,000 services × 1 endpoint (a 50 MiB file) was 136–142 MiB,
/// with 2 MiB 139.6–140.1 in two runs each, start → rules unchanged.
const RELEASE_STEP: usize = 2 << 20;

/// The hashes of the documents of a read that passed the check, for
/// [`Checked::new_after`].
#[derive(Debug, Clone, Default)]
pub struct Known(Arc<HashSet<u64>>);

impl Known {
    pub(super) fn contains(&self, hash: u64) -> bool {
        self.0.contains(&hash)
    }
}

/// What one read did to the tracker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replaced {
    /// Services read.
    pub services: usize,
    /// EndpointSlices read.
    pub endpoint_slices: usize,
    /// Nodes read.
    pub nodes: usize,
    /// ServiceCIDRs read.
    pub service_cidrs: usize,
    /// Objects of the previous read that are gone, deleted from the tracker.
    pub deleted: usize,
    /// Documents of our kinds skipped because they did not decode.
    pub skipped: usize,
    /// Documents decoded (new text); the others were as last read.
    pub decoded: usize,
}

/// One read in progress: the documents seen so far and the objects that
/// went into the tracker.
struct Read {
    documents: HashMap<u64, Document>,
    /// For each object, the position of the last document giving it and
    /// whether that document is new.
    last: HashMap<HeldKey, Last>,
}

/// The last document of a read giving an object.
#[derive(Debug, Clone, Copy)]
struct Last {
    position: usize,
    /// That document is new (decoded by this read).
    fresh: bool,
    /// Some new document of this read fed the object to the tracker.
    fed: bool,
}

impl Held {
    /// Calls `release` after every few MiB of document text a read frees
    /// (and once at its end): the text was allocated by another thread
    /// than the one decoding, in another malloc arena, so what it frees
    /// would stay resident beside the tracker being built unless handed
    /// back meanwhile (the binary's `malloc_trim`).
    pub fn releasing_with(mut self, release: fn()) -> Self {
        self.release = Some(release);
        self
    }

    /// The documents held, for checking the next read.
    pub fn known(&self) -> Known {
        Known(Arc::new(self.documents.keys().copied().collect()))
    }

    /// Makes `checked` the whole state of `tracker`. The tracker is locked
    /// per object, never while decoding, so syncs are not held up; a sync
    /// that runs meanwhile sees each object either as it was or as it is
    /// now, as during a re-list. Each new document's text is freed once
    /// its objects are in.
    pub fn replace(&mut self, mut checked: Checked, tracker: &Mutex<Tracker>) -> Replaced {
        let mut replaced = Replaced::default();
        // sized for the whole read: no table is ever held twice growing
        let mut read = Read {
            documents: HashMap::with_capacity(checked.documents.len()),
            last: HashMap::with_capacity(checked.documents.len()),
        };
        let Checked {
            origin,
            documents,
            hashes,
        } = &mut checked;
        let mut freed = 0;
        for (position, (doc, hash)) in documents.iter_mut().zip(hashes.iter().copied()).enumerate() {
            let fresh = !self.documents.contains_key(&hash);
            let known = self
                .documents
                .get(&hash)
                .or_else(|| read.documents.get(&hash))
                .cloned();
            let (document, fed) = match known {
                Some(document) => (document, false),
                None => {
                    replaced.decoded += 1;
                    (feed(origin, &doc.as_document(), tracker), true)
                }
            };
            if fresh {
                // a new document is never decoded again (see restore_shadowed)
                freed += doc.drop_text();
                if freed >= RELEASE_STEP {
                    self.release.inspect(|release| release());
                    freed = 0;
                }
            }
            for key in document.keys.iter() {
                let last = read.last.entry(key.clone()).or_insert(Last {
                    position,
                    fresh,
                    fed,
                });
                *last = Last {
                    position,
                    fresh,
                    fed: last.fed || fed,
                };
            }
            read.documents.insert(hash, document);
        }
        self.restore_shadowed(&checked, tracker, &read);
        count(&read.documents, &checked, &mut replaced);
        replaced.deleted = self.delete_gone(&read, tracker);
        self.documents = read.documents;
        replaced
    }

    /// An object fed from a new document but given again by a later
    /// document that was not re-read (a duplicate): the later one wins, as
    /// in a full read, so it is decoded again for that object (from a
    /// document not new to this read: its text is still there).
    fn restore_shadowed(&self, checked: &Checked, tracker: &Mutex<Tracker>, read: &Read) {
        let shadowed: HashMap<&HeldKey, usize> = read
            .last
            .iter()
            .filter(|(_, last)| last.fed && !last.fresh)
            .map(|(key, last)| (key, last.position))
            .collect();
        let positions: HashSet<usize> = shadowed.values().copied().collect();
        for (position, doc) in checked.documents.iter().enumerate() {
            if !positions.contains(&position) {
                continue;
            }
            decode::decode_one(checked.origin(), &doc.as_document(), &mut |object| {
                let (kind, key) = object.key();
                if shadowed.get(&HeldKey::new(kind, &key)) == Some(&position) {
                    object.upsert(&mut lock(tracker));
                }
            });
        }
    }

    /// Deletes from `tracker` the objects of the last read that `read`
    /// no longer gives; returns how many.
    fn delete_gone(&self, read: &Read, tracker: &Mutex<Tracker>) -> usize {
        let mut tracker = lock(tracker);
        let mut deleted = 0;
        let before: HashSet<&HeldKey> = self.documents.values().flat_map(|d| d.keys.iter()).collect();
        for key in before {
            if !read.last.contains_key(key) {
                delete(key.kind(), &key.object_key(), &mut tracker);
                deleted += 1;
            }
        }
        deleted
    }
}

/// Decodes a new document, feeding its objects to the tracker.
fn feed(origin: &str, doc: &super::split::Document<'_>, tracker: &Mutex<Tracker>) -> Document {
    let mut keys = Vec::new();
    let skipped = decode::decode_one(origin, doc, &mut |object: Object| {
        let (kind, key) = object.key();
        keys.push(HeldKey::new(kind, &key));
        object.upsert(&mut lock(tracker));
    })
    .len();
    Document {
        keys: keys.into(),
        skipped,
    }
}

/// The objects of the read by kind, and the documents skipped, counting
/// each document as often as the file holds it.
fn count(documents: &HashMap<u64, Document>, checked: &Checked, replaced: &mut Replaced) {
    for hash in &checked.hashes {
        let Some(document) = documents.get(hash) else {
            continue;
        };
        replaced.skipped += document.skipped;
        for key in document.keys.iter() {
            match key.kind() {
                ObjectKind::Service => replaced.services += 1,
                ObjectKind::EndpointSlice => replaced.endpoint_slices += 1,
                ObjectKind::Node => replaced.nodes += 1,
                ObjectKind::ServiceCIDR => replaced.service_cidrs += 1,
            }
        }
    }
}

fn lock(tracker: &Mutex<Tracker>) -> MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(PoisonError::into_inner)
}

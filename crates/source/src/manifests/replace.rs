//! Making a read of the file the tracker's whole state, one object at a
//! time, as a re-list does: each object of a new document goes into the
//! tracker soon after it is decoded (on a second thread, see `pipeline`)
//! and is dropped; at the end, what the previous
//! read held and this one no longer shows is deleted. Between reads only
//! the keys of each document's objects are kept, by the document's hash:
//! a document read before (same text) is neither decoded nor fed to the
//! tracker again, and a read works only on the documents that are new
//! and those that are gone. Each key is allocated once and shared by every index
//! of a read ([`HeldKey`]); each new document's text is freed as soon as
//! it is decoded.

use super::held_key::{HeldKey, Keys};
use super::object::{Object, delete};
use super::pipeline::{self, Give};
use super::split::OwnedDocument;
use super::{Checked, decode};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
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
    /// Shared with the [`Known`] of a read being checked.
    documents: Arc<HashMap<u64, Document>>,
    /// Called after every [`RELEASE_STEP`] of document text freed.
    release: Option<fn()>,
}

/// How much document text a read frees between two calls of the release
/// hook ([`Held::releasing_with`]). 8 MiB until stop 36: the read's peak
/// RSS at 100,000 services × 1 endpoint (a 50 MiB file) was 136–142 MiB,
/// with 2 MiB 139.6–140.1 in two runs each, start → rules unchanged.
const RELEASE_STEP: usize = 2 << 20;

/// The documents of a read that passed the check, for
/// [`Checked::new_after`] and [`Checked::read_after`].
#[derive(Debug, Clone, Default)]
pub struct Known(Arc<HashMap<u64, Document>>);

impl Known {
    pub(super) fn contains(&self, hash: u64) -> bool {
        self.0.contains_key(&hash)
    }

    /// How many documents (each text once).
    pub(super) fn len(&self) -> usize {
        self.0.len()
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

/// The new documents of one read, fed to the tracker.
#[derive(Default)]
struct Fed {
    /// By hash.
    documents: HashMap<u64, Document>,
    /// For each of their objects, the position of the last new document
    /// giving it.
    last: HashMap<HeldKey, usize>,
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
        Known(Arc::clone(&self.documents))
    }

    /// Makes `checked` the whole state of `tracker`. The tracker is locked
    /// per document, never while decoding, so syncs are not held up; a sync
    /// that runs meanwhile sees each object either as it was or as it is
    /// now, as during a re-list. Each new document's text is freed once
    /// it is decoded. Only the new documents and the ones gone are
    /// worked on: a re-read that changes one document of 200,000 builds no
    /// table of them all.
    pub fn replace(&mut self, mut checked: Checked, tracker: &Mutex<Tracker>) -> Replaced {
        let fed = self.feed_new(&mut checked, tracker);
        let gone = self.gone(&checked);
        let (restore, still_given) = self.given_by_held(&checked, &fed.last, &gone);
        self.restore(&checked, tracker, &restore);
        let mut replaced = Replaced {
            decoded: fed.documents.len(),
            deleted: delete_gone(&gone, &fed.last, &still_given, tracker),
            ..Replaced::default()
        };
        let documents = Arc::make_mut(&mut self.documents);
        for hash in gone.keys() {
            documents.remove(hash);
        }
        let mut fed_documents = fed.documents;
        if documents.len() < fed_documents.len() {
            // the smaller table goes into the larger: none grows twice over
            std::mem::swap(documents, &mut fed_documents);
        }
        documents.extend(fed_documents);
        count(documents, &checked, &mut replaced);
        replaced
    }

    /// Feeds the documents `self` does not hold to the tracker, in file
    /// order (a text given twice is fed once), freeing their text. They
    /// are decoded on a second thread while this one feeds the objects of
    /// those before them to the tracker.
    fn feed_new(&self, checked: &mut Checked, tracker: &Mutex<Tracker>) -> Fed {
        // sized for the whole read: no table is ever held twice growing
        let new = checked.hashes.iter().filter(|h| !self.documents.contains_key(h)).count();
        let mut fed = Fed {
            documents: HashMap::with_capacity(new),
            last: HashMap::with_capacity(new),
        };
        let Checked {
            origin,
            documents,
            hashes,
            ..
        } = checked;
        let mut freed = 0;
        pipeline::two_stages_giving_back(
            |give| decode_new(origin, documents, hashes, &self.documents, give),
            |decoded, done| {
                let document = match decoded.objects {
                    Some((objects, skipped)) => {
                        let document = feed(&objects, skipped, tracker);
                        done.push(objects);
                        document
                    }
                    // given earlier in this read: fed then
                    None => fed.documents.get(&decoded.hash).cloned().unwrap_or_default(),
                };
                freed += decoded.freed;
                if freed >= RELEASE_STEP {
                    self.release.inspect(|release| release());
                    freed = 0;
                }
                for key in document.keys.iter() {
                    fed.last.insert(key.clone(), decoded.position);
                }
                fed.documents.insert(decoded.hash, document);
            },
        );
        fed
    }

    /// The documents held that this read no longer has.
    fn gone(&self, checked: &Checked) -> HashMap<u64, Document> {
        let mut present = checked.hashes.clone();
        present.sort_unstable();
        self.documents
            .iter()
            .filter(|(hash, _)| present.binary_search(hash).is_err())
            .map(|(hash, document)| (*hash, document.clone()))
            .collect()
    }

    /// What the held documents this read still has give: the objects to
    /// decode again from the last held document giving them (it wins, as
    /// in a full read), with its position — those fed from an earlier new
    /// document, and those of a document gone that no later new document
    /// gave (the gone one may have been the copy the tracker holds) — and
    /// which objects of the documents `gone` they still give.
    fn given_by_held<'a>(
        &'a self,
        checked: &Checked,
        fed: &HashMap<HeldKey, usize>,
        gone: &HashMap<u64, Document>,
    ) -> (HashMap<&'a HeldKey, usize>, HashSet<&'a HeldKey>) {
        let gone_keys: HashSet<&HeldKey> = gone.values().flat_map(|d| d.keys.iter()).collect();
        let mut restore = HashMap::new();
        let mut still_given = HashSet::new();
        for (position, hash) in checked.hashes.iter().enumerate() {
            let Some(document) = self.documents.get(hash) else {
                continue;
            };
            for key in document.keys.iter() {
                let of_gone = gone_keys.contains(key);
                let after_fed = fed.get(key).is_none_or(|fed_at| *fed_at < position);
                if after_fed && (of_gone || fed.contains_key(key)) {
                    restore.insert(key, position);
                }
                if of_gone {
                    still_given.insert(key);
                }
            }
        }
        (restore, still_given)
    }

    /// Decodes again, for the objects `restore` names, the held
    /// documents that give them last (their text is still there, or read
    /// again from the file when it was not kept).
    fn restore(&self, checked: &Checked, tracker: &Mutex<Tracker>, restore: &HashMap<&HeldKey, usize>) {
        let mut positions: Vec<usize> = restore.values().copied().collect();
        positions.sort_unstable();
        positions.dedup();
        let missing: std::collections::HashSet<usize> = positions
            .iter()
            .copied()
            .filter(|p| checked.document_at(*p).is_none())
            .collect();
        let reread = if missing.is_empty() {
            Vec::new()
        } else {
            checked.reread(&missing)
        };
        for position in positions {
            let doc = checked
                .document_at(position)
                .or_else(|| reread.iter().find(|d| d.position() == position));
            let Some(doc) = doc else {
                tracing::warn!(
                    origin = checked.origin(),
                    "document {} changed while it was read; the next read applies it",
                    position + 1
                );
                continue;
            };
            decode::decode_one(checked.origin(), &doc.as_document(), &mut |object| {
                let (kind, key) = object.key();
                if restore.get(&HeldKey::new(kind, &key)) == Some(&position) {
                    object.upsert(&mut lock(tracker));
                }
            });
        }
    }
}

/// Deletes from `tracker` the objects of the documents `gone` that no
/// document of the read gives any more; returns how many.
fn delete_gone(
    gone: &HashMap<u64, Document>,
    fed: &HashMap<HeldKey, usize>,
    still_given: &HashSet<&HeldKey>,
    tracker: &Mutex<Tracker>,
) -> usize {
    let keys: HashSet<&HeldKey> = gone
        .values()
        .flat_map(|d| d.keys.iter())
        .filter(|key| !fed.contains_key(*key) && !still_given.contains(key))
        .collect();
    let mut tracker = lock(tracker);
    for key in &keys {
        delete(key.kind(), &key.object_key(), &mut tracker);
    }
    keys.len()
}

/// A new document of a read, decoded, its text freed.
struct Decoded {
    position: usize,
    hash: u64,
    /// Its objects and how many of our kinds did not decode; `None` when
    /// an earlier document of the read had the same text.
    objects: Option<(Vec<Object>, usize)>,
    /// Bytes of text freed.
    freed: usize,
}

/// Decodes, in file order, the documents whose hash `held` does not hold
/// (each text once), giving each on and freeing its text.
fn decode_new(
    origin: &str,
    documents: &mut [OwnedDocument],
    hashes: &[u64],
    held: &HashMap<u64, Document>,
    give: &mut Give<Decoded, Vec<Object>>,
) {
    let mut seen = HashSet::new();
    for doc in documents {
        let position = doc.position();
        let Some(hash) = hashes.get(position).copied() else {
            continue;
        };
        if held.contains_key(&hash) {
            continue;
        }
        let objects = seen.insert(hash).then(|| {
            let mut objects = Vec::new();
            let skipped = decode::decode_one(origin, &doc.as_document(), &mut |o| objects.push(o));
            (objects, skipped.len())
        });
        // a new document is never decoded again (see Held::restore)
        let freed = doc.drop_text();
        give.give(Decoded {
            position,
            hash,
            objects,
            freed,
        });
    }
}

/// Feeds a new document's objects to the tracker.
fn feed(objects: &[Object], skipped: usize, tracker: &Mutex<Tracker>) -> Document {
    let keys = objects
        .iter()
        .map(|object| {
            let (kind, key) = object.key();
            HeldKey::new(kind, &key)
        })
        .collect::<Vec<_>>()
        .into();
    let mut tracker = lock(tracker);
    for object in objects {
        object.upsert(&mut tracker);
    }
    Document { keys, skipped }
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

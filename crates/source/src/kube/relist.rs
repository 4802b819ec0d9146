//! Applying one kind's watcher events to the tracker, including re-lists.
//!
//! The watcher re-lists after it lost its place (410 Gone, or a list that
//! failed half way): `Init`, one `InitApply` per object, `InitDone`.
//! Objects applied while listing go straight into the tracker (no second
//! copy of the cluster is buffered); at `InitDone`, every object that was
//! known before but not listed again was deleted while the watch was
//! down, and is deleted from the tracker. The keys of the objects seen
//! are all that is kept.

use super::kinds::{ObjectKey, Watched};
use crate::lenient::{Decoded, Invalid};
use ::kube::runtime::watcher::Event;
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};
use tracker::Tracker;

/// The objects of one kind the tracker was given, and the re-list in
/// progress.
#[derive(Debug, Default)]
pub(crate) struct Known {
    keys: HashSet<ObjectKey>,
    /// Objects skipped as invalid, with the problem logged for each.
    invalid: HashMap<ObjectKey, Box<str>>,
    relisting: Option<HashSet<ObjectKey>>,
    lists: u64,
}

/// What one event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing to tell (a marker, or an object applied during a list: the
    /// list is reported whole at its end).
    Quiet,
    /// An add, update or delete was applied; `pending` says whether the
    /// tracker now holds changes not yet synced.
    Applied {
        /// The tracker has changes to sync.
        pending: bool,
    },
    /// A (re-)list finished.
    Listed {
        /// The tracker has changes to sync.
        pending: bool,
        /// This was the kind's first complete list.
        first: bool,
        /// How many objects it listed.
        objects: usize,
        /// How many objects it found gone.
        deleted: usize,
    },
}

impl Known {
    /// Applies one watcher event to `tracker`. An invalid object is
    /// treated as absent: deleted if the tracker had it, never listed.
    pub(crate) fn apply<K: Watched>(
        &mut self,
        event: Event<Decoded<K>>,
        tracker: &Mutex<Tracker>,
    ) -> Step {
        match event {
            Event::Apply(Decoded::Valid(obj)) => {
                let key = ObjectKey::of(obj.meta());
                self.invalid.remove(&key);
                self.keys.insert(key);
                let mut tracker = lock(tracker);
                obj.upsert(&mut tracker);
                Step::Applied {
                    pending: tracker.has_changes(),
                }
            }
            Event::Delete(Decoded::Valid(obj)) => {
                let key = ObjectKey::of(obj.meta());
                self.invalid.remove(&key);
                self.forget::<K>(&key, tracker)
            }
            Event::Delete(Decoded::Invalid(bad)) => {
                let key = ObjectKey::new(&bad.namespace, &bad.name);
                self.invalid.remove(&key);
                self.forget::<K>(&key, tracker)
            }
            Event::Apply(Decoded::Invalid(bad)) => {
                let key = self.note_invalid::<K>(bad);
                self.forget::<K>(&key, tracker)
            }
            Event::Init => {
                self.relisting = Some(HashSet::with_capacity(self.keys.len()));
                Step::Quiet
            }
            Event::InitApply(Decoded::Valid(obj)) => {
                let key = ObjectKey::of(obj.meta());
                self.invalid.remove(&key);
                obj.upsert(&mut lock(tracker));
                self.relisting.get_or_insert_default().insert(key.clone());
                self.keys.insert(key);
                Step::Quiet
            }
            Event::InitApply(Decoded::Invalid(bad)) => {
                self.note_invalid::<K>(bad);
                Step::Quiet
            }
            Event::InitDone => self.finish_list::<K>(tracker),
        }
    }

    /// Deletes `key`'s object from the tracker (a no-op for one it never had).
    fn forget<K: Watched>(&mut self, key: &ObjectKey, tracker: &Mutex<Tracker>) -> Step {
        self.keys.remove(key);
        let mut tracker = lock(tracker);
        K::with_key(key).delete(&mut tracker);
        Step::Applied {
            pending: tracker.has_changes(),
        }
    }

    /// Logs an invalid object once (again only when its problem changes)
    /// and returns its key.
    fn note_invalid<K: Watched>(&mut self, bad: Invalid) -> ObjectKey {
        let key = ObjectKey::new(&bad.namespace, &bad.name);
        if self.invalid.get(&key).map(AsRef::as_ref) != Some(bad.problem.as_str()) {
            tracing::warn!(
                kind = K::PLURAL,
                object = %key,
                problem = %bad.problem,
                "object skipped: a field the proxy reads is malformed; treated as absent"
            );
            self.invalid
                .insert(key.clone(), bad.problem.into_boxed_str());
        }
        key
    }

    /// Deletes what the list just finished no longer showed.
    fn finish_list<K: Watched>(&mut self, tracker: &Mutex<Tracker>) -> Step {
        let listed = self.relisting.take().unwrap_or_default();
        let mut tracker = lock(tracker);
        let mut deleted = 0;
        for gone in self.keys.difference(&listed) {
            K::with_key(gone).delete(&mut tracker);
            deleted += 1;
        }
        self.keys = listed;
        self.lists += 1;
        Step::Listed {
            pending: tracker.has_changes(),
            first: self.lists == 1,
            objects: self.keys.len(),
            deleted,
        }
    }
}

pub(crate) fn lock(tracker: &Mutex<Tracker>) -> MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;

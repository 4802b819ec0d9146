//! Making a read of the file the tracker's whole state, one object at a
//! time, as a re-list does: each object goes into the tracker as it is
//! decoded and is dropped; at the end, what the previous read held and
//! this one no longer shows is deleted. The keys of the objects read are
//! all that is kept between reads.

use super::Checked;
use super::object::{Object, delete};
use crate::kube::kinds::ObjectKey;
use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};
use tracker::{ObjectKind, Tracker};

/// The objects of the last read the tracker was given, by kind and
/// `namespace/name`.
#[derive(Debug, Default)]
pub struct Held {
    keys: HashSet<(ObjectKind, ObjectKey)>,
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
}

impl Held {
    /// Makes `checked` the whole state of `tracker`. The tracker is locked
    /// per object, never while decoding, so syncs are not held up; a sync
    /// that runs meanwhile sees each object either as it was or as it is
    /// now, as during a re-list.
    pub fn replace(&mut self, checked: &Checked, tracker: &Mutex<Tracker>) -> Replaced {
        let mut replaced = Replaced::default();
        let mut seen = HashSet::with_capacity(self.keys.len());
        let skipped = checked.for_each_object(|object| {
            count(&object, &mut replaced);
            seen.insert(object.key());
            object.upsert(&mut lock(tracker));
        });
        replaced.skipped = skipped.len();
        let mut tracker = lock(tracker);
        for (kind, key) in self.keys.difference(&seen) {
            delete(*kind, key, &mut tracker);
            replaced.deleted += 1;
        }
        self.keys = seen;
        replaced
    }
}

fn count(object: &Object, replaced: &mut Replaced) {
    match object {
        Object::Service(_) => replaced.services += 1,
        Object::EndpointSlice(_) => replaced.endpoint_slices += 1,
        Object::Node(_) => replaced.nodes += 1,
        Object::ServiceCIDR(_) => replaced.service_cidrs += 1,
    }
}

fn lock(tracker: &Mutex<Tracker>) -> MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(PoisonError::into_inner)
}

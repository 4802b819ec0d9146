//! A map shared between snapshots until one of them changes it: cloning
//! a [`Snapshot`](crate::Snapshot) costs nothing, and the tracker's copy
//! is copied only when it changes while a sync still holds the one it
//! gave (at 100,000 services, each copy of the two maps is some 4 MiB).

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A `BTreeMap` behind an `Arc`, copied on its first change while shared.
#[derive(Debug, PartialEq, Eq)]
pub struct SharedMap<K, V>(Arc<BTreeMap<K, V>>);

impl<K, V> Clone for SharedMap<K, V> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<K, V> Default for SharedMap<K, V> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<K, V> Deref for SharedMap<K, V> {
    type Target = BTreeMap<K, V>;

    fn deref(&self) -> &BTreeMap<K, V> {
        &self.0
    }
}

impl<K: Clone, V: Clone> DerefMut for SharedMap<K, V> {
    /// The map to change: copied first if another snapshot shares it.
    fn deref_mut(&mut self) -> &mut BTreeMap<K, V> {
        Arc::make_mut(&mut self.0)
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for SharedMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(Arc::new(iter.into_iter().collect()))
    }
}

impl<'a, K, V> IntoIterator for &'a SharedMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::collections::btree_map::Iter<'a, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_shares_until_one_side_changes() {
        let mut a: SharedMap<u32, u32> = [(1, 10), (2, 20)].into_iter().collect();
        let b = a.clone();
        assert!(Arc::ptr_eq(&a.0, &b.0));
        a.insert(3, 30);
        assert!(!Arc::ptr_eq(&a.0, &b.0), "changed while shared: copied");
        assert_eq!(b.len(), 2);
        assert_eq!(a.len(), 3);
        let before = a.clone();
        drop(before);
        let held = Arc::as_ptr(&a.0);
        a.insert(4, 40);
        assert_eq!(Arc::as_ptr(&a.0), held, "changed alone: in place");
    }
}

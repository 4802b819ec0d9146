//! The EndpointSlices of one service, by slice name.

use crate::slice::SliceInfo;

/// The slices of one service in slice-name order (the order merging
/// follows). Most services have one slice, so this is a small sorted
/// vector holding exactly its entries rather than a map.
#[derive(Debug, Default)]
pub(crate) struct ServiceSlices {
    by_name: Vec<(Box<str>, SliceInfo)>,
}

impl ServiceSlices {
    fn position(&self, name: &str) -> Result<usize, usize> {
        self.by_name.binary_search_by(|(n, _)| (**n).cmp(name))
    }

    /// The slice named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&SliceInfo> {
        self.position(name).ok().map(|i| &self.by_name[i].1)
    }

    /// Stores `info` as slice `name`, replacing what was held.
    pub(crate) fn insert(&mut self, name: &str, info: SliceInfo) {
        match self.position(name) {
            Ok(i) => self.by_name[i].1 = info,
            Err(i) => {
                self.by_name.reserve_exact(1);
                self.by_name.insert(i, (name.into(), info));
            }
        }
    }

    /// Forgets slice `name`.
    pub(crate) fn remove(&mut self, name: &str) {
        if let Ok(i) = self.position(name) {
            self.by_name.remove(i);
            self.by_name.shrink_to_fit();
        }
    }

    /// No slice left.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The slices in name order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &SliceInfo> {
        self.by_name.iter().map(|(_, info)| info)
    }
}

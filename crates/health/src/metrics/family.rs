//! A metric family: one value per label set, created on first use, as
//! Go's `*Vec` metrics.

use super::labels::Labels;
use super::text::{Exposition, Sample};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The series of one family, keyed (and printed) in label order.
pub(super) struct Family<M> {
    series: Mutex<BTreeMap<Labels, M>>,
    make: fn() -> M,
}

impl<M: Default> Default for Family<M> {
    fn default() -> Self {
        Self::with_constructor(M::default)
    }
}

impl<M: Default> Family<M> {
    /// An unlabelled metric: one series, present (at zero) from the start.
    pub(super) fn single() -> Self {
        let family = Self::default();
        family.lock().insert(Labels::none(), M::default());
        family
    }
}

impl<M> Family<M> {
    /// A family whose new series start as `make()` (histogram buckets).
    pub(super) fn with_constructor(make: fn() -> M) -> Self {
        Self { series: Mutex::new(BTreeMap::new()), make }
    }

    /// Changes the series of `labels`, creating it first if needed.
    pub(super) fn update(&self, labels: Labels, change: impl FnOnce(&mut M)) {
        let mut series = self.lock();
        change(series.entry(labels).or_insert_with(self.make));
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<Labels, M>> {
        self.series.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<M: Sample> Family<M> {
    /// Adds this family to the scrape as `name`.
    pub(super) fn expose(&self, exposition: &mut Exposition, name: &str, help: &str) {
        exposition.add(name, help, self.lock().iter());
    }
}

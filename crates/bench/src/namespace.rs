//! The benchmark's network namespace: testkit's [`Netns`] (unique name,
//! `lo` up, deleted on drop, stale ones of dead runs swept), also
//! registered for deletion on Ctrl-C.

use crate::interrupt;
use std::ops::Deref;
use testkit::netns::Netns;

/// A fresh namespace that is deleted on drop and on interrupt.
pub struct BenchNetns {
    inner: Netns,
}

impl BenchNetns {
    /// Creates `kprs-<pid>-<n>-bench` with loopback up.
    pub fn new() -> anyhow::Result<Self> {
        Self::labelled("bench")
    }

    /// Creates `kprs-<pid>-<n>-<label>` with loopback up.
    pub fn labelled(label: &str) -> anyhow::Result<Self> {
        let inner = Netns::new(label)?;
        interrupt::track_netns(inner.name());
        Ok(Self { inner })
    }
}

impl Deref for BenchNetns {
    type Target = Netns;

    fn deref(&self) -> &Netns {
        &self.inner
    }
}

impl Drop for BenchNetns {
    fn drop(&mut self) {
        interrupt::forget_netns(self.inner.name());
    }
}

//! The applier: brings one of our tables in the kernel to a desired
//! [`TableContents`], writing only what differs.
//!
//! * [`diff`] (pure) compares a desired table with the current one and
//!   returns the [`Transaction`] that turns one into the other, ordered so
//!   that every chain and set exists before a rule or element names it and
//!   nothing is deleted while something still refers to it.
//! * [`Syncer`] keeps, per table, what it applied last: a *full* sync reads
//!   our table back over netlink (nothing else) and diffs against it; a
//!   *partial* sync diffs against the last applied state without reading
//!   anything back. It reports when only a full sync is safe
//!   ([`Syncer::needs_full_sync`]); the caller decides when to ask for one.
//! * [`cleanup`] deletes our table (`--cleanup`, start-up in other modes).
//!
//! Chains whose rules differ are rewritten whole (flush, then add the
//! rules): a rule can only be appended by this codec, rules written by a
//! partial sync have no known handle, and kube-proxy's chains are short.
//! Set and map elements are added and deleted one by one.
//!
//! Anonymous sets (`numgen … map { … }`, `{ 172.20.0.0/16, … }`) belong to
//! the rule that uses them and are compared as part of it, by content. New
//! ones are named by us (`__kp<n>`, never reused while a table exists)
//! instead of `__set%d`: the kernel scans every set name to pick a
//! `__set%d` name (see the crate README); `nft` still lists them inline.
//! A bound anonymous set is constant, so a full sync does not dump the
//! elements of those whose content it knows — by name, those the same
//! syncer wrote into the same table; by the content fingerprint we put in
//! the comment of every anonymous set we create, those a restarted proxy
//! wants as they are: dumping each makes the kernel walk all the table's
//! sets (O(n²) for n services).

mod cleanup;
mod diff;
pub(crate) mod digest;
mod element_changes;
mod fingerprint;
pub(crate) mod listed;
mod names;
mod piece;
mod report;
mod send_thread;
mod split;
mod staged;
mod state;
mod stream;
mod syncer;
#[cfg(test)]
mod tests;

pub use cleanup::cleanup;
pub use diff::diff;
pub use report::{SyncCounts, SyncReport};
pub use syncer::Syncer;

/// The name of kube-proxy's tables (`ip kube-proxy`, `ip6 kube-proxy`).
pub const KUBE_PROXY_TABLE: &str = "kube-proxy";

#[allow(unused_imports)] // doc links
use crate::{TableContents, Transaction};

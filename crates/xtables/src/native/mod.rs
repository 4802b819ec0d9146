//! The native legacy writer: builds an x_tables table blob itself and writes it with
//! `IPT_SO_SET_REPLACE`, skipping `iptables-legacy-restore`'s user space
//! (parsing and libiptc's chain building: almost all of a legacy first
//! full sync at 10,000 services).
//!
//! [`encode`] turns one typed rule into an entry, byte for byte as
//! `iptables-legacy-restore` 1.8.9 builds it, for exactly the matches and
//! targets the modes render (anything else is [`Unsupported`], naming
//! what); [`table`] reads a table blob into chains (keeping every chain and
//! rule of other owners as raw entries), splices chains in and out as
//! `iptables-restore --noflush` does, and lays the blob out again;
//! [`socket`] reads and replaces a table through the raw socket options;
//! [`restore`] applies a whole restore input; [`child`] runs that in a
//! child process (`kube-proxy-rs xtables-restore`), which is how the proxy
//! uses it by default for full syncs (`apply/restore.rs`).

pub mod child;
pub mod encode;
pub mod layout;
pub mod lock;
mod parse;
pub mod restore;
pub mod socket;
pub mod table;

pub use encode::{Entry, Unsupported, encode_rule};
pub use layout::Family;

#[cfg(test)]
mod tests;

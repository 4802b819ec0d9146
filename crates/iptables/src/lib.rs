//! iptables mode. [`render`] turns a [`model::Snapshot`] into our chains
//! and rules (pure: typed [`xtables`] rules for our own chains, plus the
//! jumps from the built-in chains), piece by piece ([`Rendering`]) or
//! collected in a [`Ruleset`]; [`xtables::apply`] feeds them to
//! `iptables-restore --noflush --wait` and is the only part that touches
//! the kernel; [`proxier::IptablesProxier`] is the mode behind the
//! [`::proxier::Proxier`] seam.

pub mod chain_name;
pub mod proxier;
pub mod render;

pub use xtables::{BuiltinJump, Piece, Rendering, RuleCounts, Ruleset, Table, TableRules};

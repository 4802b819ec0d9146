//! iptables mode. [`render`] turns a [`model::Snapshot`] into our chains
//! and rules (pure: the `iptables-restore` input for our own chains, plus
//! the jumps from the built-in chains), piece by piece ([`Rendering`]) or
//! collected in a [`Ruleset`]; [`apply`] feeds it to `iptables-restore
//! --noflush --wait` and is the only part that touches the kernel;
//! [`proxier::IptablesProxier`] is the mode behind the [`::proxier::Proxier`]
//! seam.

pub mod apply;
pub mod chain_name;
mod error;
pub mod proxier;
pub mod render;
pub mod rendering;
pub mod ruleset;

pub use error::Error;
pub use rendering::{Piece, Rendering, RuleCounts};
pub use ruleset::{BuiltinJump, Ruleset, Table, TableRules};

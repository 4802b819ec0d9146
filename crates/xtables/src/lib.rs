//! iptables rules for every mode that writes them (iptables mode, IPVS
//! mode's companion rules), like upstream's `pkg/util/iptables`.
//!
//! [`rules`] is pure: typed rules ([`Rule`]: chain, matches, [`Target`]),
//! their tables ([`Ruleset`]), the jumps from built-in chains
//! ([`BuiltinJump`]) and per-family spellings; a rule's line is spelled
//! once, when it is built, and only written or hashed as a whole, never
//! read back. [`rendering`] is what the
//! applier walks (pieces of rules). [`chains`] names the chains that are
//! ours. [`apply`] is the only part that touches the kernel: it feeds a
//! rendering to `iptables-restore --noflush`, reading chains and jump
//! targets from the typed rules, and parses only what the kernel says
//! (`iptables-save`).

pub mod apply;
pub mod chains;
pub mod native;
mod error;
pub mod rendering;
pub mod rules;

pub use error::{Error, RestoreFailure, Rollback};
pub use rendering::{Piece, Rendering, RuleCounts};
pub use rules::{BuiltinJump, FamilyText, RejectWith, Rule, RuleBuilder, Ruleset, Table, TableRules, Target};

//! The ipsets of IPVS mode: their definitions ([`KubeSet`]), their members
//! ([`IpSets`], pure), the `ipset restore` batch that syncs them (pure), and
//! [`apply`], which runs the `ipset` tool.

pub mod apply;
mod kube_set;
pub mod members;
mod restore;

pub use kube_set::{KubeSet, SetType};
pub use members::IpSets;
pub use restore::render_ipset_restore;

//! `kube-proxy-rs explain`: why a packet goes where it goes, for an
//! operator. Holds the packet tracers (iptables rules with their ipsets and
//! IPVS virtual servers in [`tracer`], nftables tables in [`nft`]) and turns a trace into an
//! [`Explanation`]: the chains and map lookups that matched, the endpoints a
//! new connection may reach with their probability, masquerading, or where
//! and why it is dropped or rejected, naming the Service port from the
//! rules' comments.
//!
//! Pure: parsing and walking take text and values. Only [`live`] reads the
//! kernel (`iptables-save`, `ipset save`, IPVS and our nftables table over
//! netlink), for the
//! binary's `explain` subcommand; a saved dump is explained without it.

mod error;
pub mod explanation;
pub mod iptables;
pub mod ipvs;
pub mod live;
pub mod migrate;
pub mod nft;
mod node;
mod query;
pub mod service;
pub mod tracer;

pub use error::ExplainError;
pub use explanation::{Explanation, PathView, Reach};
pub use node::Node;
pub use query::{Query, Sender};

//! A packet tracer (DESIGN.md test layer 3): reads rendered rules back and
//! walks the first packet of a new connection through them, reporting
//! every outcome it can have — the DNAT targets it can reach and whether
//! each is masqueraded, DROP, REJECT, or accepted unchanged — with the
//! path to each for failure messages.
//!
//! Matches that depend on chance or history (`-m statistic`, `-m recent`
//! checks, an interface the trace does not know) are explored both ways,
//! so a verdict is the *set* of reachable outcomes. Anything the tracer
//! does not model is an error naming the rule, never silently ignored.
//!
//! Interfaces: `-i` matches the packet's [`Origin::Inbound`] interface
//! when given (`lo` for packets a local process sends to a local address);
//! `-o` routes the current destination with [`TraceContext::routes`] (`lo`
//! for local addresses). When the interface is unknown both answers are
//! explored. A hook without that interface (no `-i` in OUTPUT and
//! POSTROUTING, no `-o` in PREROUTING and INPUT) compares as the empty
//! name, as the kernel does.
//!
//! The datapath is iptables ([`Rules`]), with IPVS virtual servers when
//! the context has some ([`TraceContext::virtual_servers`]); nftables is
//! walked by `crate::nft`, reporting the same backend-neutral [`Verdict`].

mod context;
mod error;
pub(crate) mod flight;
mod hooks;
mod ipset;
mod ipvs;
mod matches;
mod packet;
mod restore;
mod rule;
mod rules;
mod target;
mod verdict;
pub(crate) mod walk;
pub(crate) mod words;

pub use context::{Route, TraceContext};
pub use error::TraceError;
pub use ipset::{IpSet, IpSetKind, IpSets};
pub use ipvs::VirtualService;
pub use matches::{AddrType, CtState, Match, ProtoSpec, RecentAction, Side, Statistic};
pub use packet::{DEFAULT_SOURCE_PORT, Origin, Packet, Protocol};
pub use restore::parse_rules;
pub use rules::{Chain, Rule, Rules, Table};
pub use target::{MarkOp, Target};
pub use verdict::{Outcome, Path, Policy, RuleRef, Step, Verdict, describe_outcomes};

/// A node datapath a packet can be traced through: iptables rules today,
/// an IPVS table or an nftables ruleset later. Every datapath answers with
/// the same [`Verdict`], so one table of flow cases runs against all.
pub trait Datapath {
    /// Every outcome `packet` (the first packet of a new connection) can
    /// have on the node `ctx` describes.
    fn trace(&self, ctx: &TraceContext, packet: &Packet) -> Result<Verdict, TraceError>;
}

impl Datapath for Rules {
    fn trace(&self, ctx: &TraceContext, packet: &Packet) -> Result<Verdict, TraceError> {
        hooks::trace_rules(self, ctx, packet)
    }
}

/// Traces `packet` through iptables `rules` on the node `ctx` describes.
pub fn trace(rules: &Rules, ctx: &TraceContext, packet: &Packet) -> Result<Verdict, TraceError> {
    rules.trace(ctx, packet)
}

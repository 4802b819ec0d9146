//! nftables mode: a packet walked through nf_tables tables as the kernel
//! runs them — base chains by hook and priority, rules as register
//! machines over the kernel's own expressions (payload, meta, cmp,
//! bitwise, lookups in sets and verdict maps, numgen, nat, masquerade,
//! reject, fib, ct). The tables come from the `nftables` crate's types:
//! read back over netlink ([`crate::live`]) or compiled from `nft -j list
//! ruleset` ([`json`]), so one walker serves both.
//!
//! `numgen random mod N` forks the packet N ways, each with chance 1/N; a
//! lookup in a dynamic set (session affinity) forks into a returning
//! client (sticky) and a new one. Anything not modelled is an error naming
//! the chain and rule.

pub(crate) mod describe;
mod eval;
mod hooks;
pub mod json;
mod registers;
mod sets;
mod walk;

use crate::error::ExplainError;
use crate::explanation::Explanation;
use crate::node::Node;
use crate::query::Query;
use crate::tracer::{Packet, TraceContext, Verdict};
use nftables::TableContents;

/// Explains `query` on `node` through `tables` (every table whose base
/// chains the packet meets; ours is `ip kube-proxy`).
pub fn explain_packet(tables: &[TableContents], node: &Node, query: &Query) -> Result<Explanation, ExplainError> {
    if tables.is_empty() {
        return Err(ExplainError::NothingProgrammed("the nftables ruleset (no table)".to_string()));
    }
    let verdict = trace(tables, &node.trace_context(), &query.packet())?;
    Ok(Explanation::new("nftables", query, &verdict))
}

/// Every outcome `packet` can have through `tables` on the node `ctx`
/// describes.
pub fn trace(tables: &[TableContents], ctx: &TraceContext, packet: &Packet) -> Result<Verdict, ExplainError> {
    hooks::trace_tables(tables, ctx, packet)
}

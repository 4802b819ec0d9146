//! iptables mode (either backend) and IPVS mode's companion rules: the
//! packet walked through `iptables-save` text (with `ipset save` text
//! for the `-m set` matches IPVS mode writes).

use crate::error::ExplainError;
use crate::explanation::Explanation;
use crate::node::Node;
use crate::query::Query;
use crate::tracer::{IpSets, parse_rules, trace};

/// Explains `query` on `node` from `iptables-save` output (`ipsets`:
/// `ipset save` output, when the rules match sets).
pub fn explain_packet(save: &str, ipsets: Option<&str>, node: &Node, query: &Query) -> Result<Explanation, ExplainError> {
    if !save.contains("KUBE-") {
        return Err(ExplainError::NothingProgrammed("the iptables-save text (no KUBE- chain)".to_string()));
    }
    let rules = parse_rules(save)?;
    let mut ctx = node.trace_context();
    if let Some(text) = ipsets {
        ctx = ctx.with_ipsets(IpSets::parse_save(text)?);
    }
    let verdict = trace(&rules, &ctx, &query.packet())?;
    Ok(Explanation::new("iptables", query, &verdict))
}

//! `KUBE-SVC-<hash>` (cluster-wide endpoints) and `KUBE-SVL-<hash>` (this
//! node's endpoints): ClientIP affinity checks first, then one jump per
//! endpoint chosen at random with upstream's probabilities 1/(n-i).

use xtables::FamilyText;
use super::naming::NamedPlan;
use xtables::{Rule, RuleBuilder};
use super::{RenderContext, ServicePortRules};
use model::Endpoint;
use std::borrow::Cow;
use std::sync::LazyLock;

/// The SVC and SVL chains the port uses.
pub(crate) fn render(ctx: &RenderContext, plan: &NamedPlan, out: &mut ServicePortRules) {
    if plan.port.uses_cluster_endpoints {
        render_chain(ctx, plan, &plan.chains.svc, &plan.port.cluster, out);
    }
    if plan.port.uses_local_endpoints {
        render_chain(ctx, plan, &plan.chains.svl, &plan.port.local, out);
    }
}

/// One balancing chain over `endpoints`.
fn render_chain(ctx: &RenderContext, plan: &NamedPlan, chain: &str, endpoints: &[&Endpoint], out: &mut ServicePortRules) {
    out.declare(chain);
    if let Some(seconds) = plan.port.svc.session_affinity_seconds {
        for ep in endpoints {
            let sep = plan.sep_chain(ep);
            let recent = format!(
                "-m recent --rcheck --seconds {seconds} --reap --name {sep} --mask {} --rsource",
                ctx.sync.family.recent_mask()
            );
            out.nat_rules.push(endpoint_rule(ctx, plan, chain, ep).matching(&recent).jump(sep).build());
        }
    }
    let n = endpoints.len();
    for (i, ep) in endpoints.iter().enumerate() {
        let mut rule = endpoint_rule(ctx, plan, chain, ep);
        if i + 1 < n {
            rule = rule.matching(&format!("-m statistic --mode random --probability {}", cached_probability(n - i)));
        }
        out.nat_rules.push(rule.jump(plan.sep_chain(ep)).build());
    }
}

/// A rule in `chain` about `ep`, commented `"<port> -> <ip:port>"` unless
/// comments are elided for a large cluster.
fn endpoint_rule<'a>(ctx: &RenderContext, plan: &NamedPlan, chain: &'a str, ep: &Endpoint) -> RuleBuilder<'a> {
    let rule = Rule::new(chain);
    if ctx.sync.large_cluster { rule } else { rule.comment(&format!("{} -> {ep}", plan.name)) }
}

/// [`probability`] of the first thousand `n`, computed once (upstream
/// precomputes them too: float formatting is slow).
fn cached_probability(n: usize) -> Cow<'static, str> {
    static TABLE: LazyLock<Vec<String>> = LazyLock::new(|| (0..=1000).map(probability).collect());
    match TABLE.get(n) {
        Some(p) => Cow::Borrowed(p),
        None => Cow::Owned(probability(n)),
    }
}

/// 1/n as iptables-save prints it: upstream writes `%0.10f`, the
/// `statistic` match stores it as a fraction of 2^31 and prints that with
/// 11 decimals (1/3 -> 0.33333333349).
pub(crate) fn probability(n: usize) -> String {
    let written: f64 = format!("{:.10}", 1.0 / n as f64).parse().unwrap_or(0.0);
    let stored = (written * f64::from(0x8000_0000u32)).round();
    format!("{:.11}", stored / f64::from(0x8000_0000u32))
}

#[cfg(test)]
mod tests {
    use super::probability;

    #[test]
    fn cached_probabilities_are_the_same() {
        assert_eq!(super::cached_probability(3), probability(3));
        assert_eq!(super::cached_probability(5000), probability(5000));
    }

    #[test]
    fn probabilities_match_iptables_save() {
        assert_eq!(probability(2), "0.50000000000");
        assert_eq!(probability(3), "0.33333333349");
        assert_eq!(probability(4), "0.25000000000");
        assert_eq!(probability(5), "0.20000000019");
        assert_eq!(probability(6), "0.16666666651");
        assert_eq!(probability(100), "0.00999999978");
    }
}

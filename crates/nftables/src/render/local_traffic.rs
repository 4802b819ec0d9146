//! The local-traffic detector as nftables spells it (upstream's
//! `IfLocalNFT` / `IfNotLocalNFT`): `ip saddr <cidr>`, `iifname <bridge>`
//! or `iifname <prefix>*`, negated with `!=`.

use super::context::RenderContext;
use super::statement::{Stmt, saddr};
use plan::LocalTraffic;

/// The match for traffic from local pods; `None` when pod traffic cannot
/// be told apart.
pub(crate) fn if_local(ctx: &RenderContext) -> Option<Stmt> {
    detector_match(ctx, false)
}

/// The match for traffic not from local pods; `None` when pod traffic
/// cannot be told apart.
pub(crate) fn if_not_local(ctx: &RenderContext) -> Option<Stmt> {
    detector_match(ctx, true)
}

fn detector_match(ctx: &RenderContext, negated: bool) -> Option<Stmt> {
    Some(match ctx.sync.local_traffic.as_ref()? {
        LocalTraffic::Cidr(net) => Stmt::Prefix {
            field: saddr(ctx.family),
            negated,
            net: *net,
        },
        LocalTraffic::Interface(name) => Stmt::Iifname {
            negated,
            name: name.clone(),
            prefix: false,
        },
        LocalTraffic::InterfacePrefix(prefix) => Stmt::Iifname {
            negated,
            name: prefix.clone(),
            prefix: true,
        },
    })
}

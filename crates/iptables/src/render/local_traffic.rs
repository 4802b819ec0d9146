//! The local-traffic detector as iptables spells it (upstream's
//! `IfLocal` / `IfNotLocal`): `-s <cidr>`, `-i <bridge>` or
//! `-i <prefix>+`, negated with `!`.

use plan::LocalTraffic;
use xtables::RuleBuilder;
use xtables::rules as rule;

/// The detector's match, printed once per sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LocalMatch {
    /// `-s <cidr>`.
    Source(String),
    /// `-i <interface>` (`+` ending a prefix).
    InInterface(String),
}

impl LocalMatch {
    /// How `detector` is spelled.
    pub(crate) fn new(detector: &LocalTraffic) -> Self {
        match detector {
            LocalTraffic::Cidr(cidr) => Self::Source(rule::net(cidr)),
            LocalTraffic::Interface(name) => Self::InInterface(name.clone()),
            LocalTraffic::InterfacePrefix(prefix) => Self::InInterface(format!("{prefix}+")),
        }
    }

    /// `rule` matching traffic from local pods (`IfLocal`).
    pub(crate) fn if_local<'a>(&self, rule: RuleBuilder<'a>) -> RuleBuilder<'a> {
        match self {
            Self::Source(net) => rule.src(net),
            Self::InInterface(iface) => rule.in_iface(iface),
        }
    }

    /// `rule` matching traffic not from local pods (`IfNotLocal`).
    pub(crate) fn if_not_local<'a>(&self, rule: RuleBuilder<'a>) -> RuleBuilder<'a> {
        match self {
            Self::Source(net) => rule.not_src(net),
            Self::InInterface(iface) => rule.not_in_iface(iface),
        }
    }
}

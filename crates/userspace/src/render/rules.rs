//! The portal rules of one family for the ports the listeners got: every
//! chain of userspace mode declared (so each sync rewrites them whole),
//! the service ports' rules in name order, the built-in jumps.

use super::{Planned, ProxyPorts, node_ports, portals};
use crate::chains::{KUBE_NODEPORT_NON_LOCAL, NAT_CHAINS, builtin_jumps};
use forward::{ListenerKey, Role};
use plan::SyncContext;
use std::net::{IpAddr, SocketAddr};
use xtables::{Rule, RuleBuilder, Ruleset, Target};

/// Where one service port's traffic goes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ports {
    /// The proxy port of ClusterIP traffic (and the node's and pods' own).
    pub internal: u16,
    /// The proxy port of traffic from outside (`internal` unless
    /// externalTrafficPolicy Local splits them).
    pub external: u16,
    /// The node's address the host chains DNAT to, if it has one.
    pub host: Option<IpAddr>,
}

impl Ports {
    /// `host:port`, the host chains' DNAT destination.
    pub(super) fn host_target(&self, port: u16) -> Option<Target<'static>> {
        self.host.map(|ip| Target::Dnat(SocketAddr::new(ip, port)))
    }

    /// The external traffic has its own proxy port.
    pub(super) fn split(&self) -> bool {
        self.internal != self.external
    }
}

/// The portal rules of `planned` with the proxy ports of `ports` (a port
/// whose listener is not bound gets no rules).
pub fn portal_rules(planned: &[Planned<'_>], ctx: &SyncContext, ports: &ProxyPorts) -> Ruleset {
    let mut ruleset = Ruleset::default();
    ruleset.nat.chains = NAT_CHAINS.iter().map(ToString::to_string).collect();
    ruleset.filter.chains = vec![KUBE_NODEPORT_NON_LOCAL.to_string()];
    ruleset.builtin_jumps = builtin_jumps();
    let host = host_address(ctx);
    for port in planned {
        let Some(ports) = ports_of(port, ports, host) else { continue };
        portals::render(&mut ruleset, port, ctx, ports);
        node_ports::render(&mut ruleset, port, ctx, ports);
    }
    ruleset
}

/// The listeners' ports of `port`, if its proxy port is bound.
fn ports_of(port: &Planned<'_>, bound: &ProxyPorts, host: Option<IpAddr>) -> Option<Ports> {
    let key = |role| ListenerKey { service_port: port.svc.name.clone(), role };
    let internal = *bound.get(&key(Role::ProxyPort))?;
    let external = if port.external.is_some() { *bound.get(&key(Role::ExternalProxyPort))? } else { internal };
    Some(Ports { internal, external, host })
}

/// The node's address for the host chains' DNAT (upstream's `hostIP`):
/// the Node's IP of the family, else its first non-loopback address.
fn host_address(ctx: &SyncContext) -> Option<IpAddr> {
    ctx.node_ip.or_else(|| ctx.local_addresses.iter().copied().find(|ip| !ip.is_loopback()))
}

/// `-p <proto> -m comment --comment "ns/name:port" -m <proto> --dport <port>`
/// in `chain`: the start of every rule of a service port.
pub(super) fn service_rule<'a>(chain: &'a str, port: &Planned<'_>, dport: u16) -> RuleBuilder<'a> {
    Rule::new(chain).comment(&port.svc.name.to_string()).dport(port.svc.name.protocol.as_lower(), dport)
}

/// Adds a built rule to the nat table.
pub(super) fn nat(ruleset: &mut Ruleset, rule: RuleBuilder<'_>) {
    ruleset.nat.rules.push(rule.build());
}

/// Pod traffic (the local-traffic detector) to an external address goes
/// to the internal proxy port first, as upstream's later modes
/// short-circuit it to the cluster-wide endpoints.
pub(super) fn from_pods<'a>(rule: RuleBuilder<'a>, ctx: &SyncContext) -> Option<RuleBuilder<'a>> {
    match ctx.local_traffic.as_ref()? {
        plan::LocalTraffic::Cidr(net) => Some(rule.src(&xtables::rules::net(net))),
        plan::LocalTraffic::Interface(name) => Some(rule.in_iface(name)),
        plan::LocalTraffic::InterfacePrefix(prefix) => Some(rule.in_iface(&format!("{prefix}+"))),
    }
}

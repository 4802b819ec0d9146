//! The listeners of every planned service port: a proxy port on the
//! family's wildcard address (the kernel or `--proxy-port-range` picks the
//! port), and a second one for external traffic under
//! externalTrafficPolicy Local.

use super::Planned;
use forward::{Listener, ListenerKey, Role};
use model::IpFamily;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The listeners `planned` needs, in its order.
pub fn listeners(planned: &[Planned<'_>], family: IpFamily) -> Vec<Listener> {
    let bind = SocketAddr::new(wildcard(family), 0);
    let mut out = Vec::with_capacity(planned.len());
    for port in planned {
        let key = |role| ListenerKey { service_port: port.svc.name.clone(), role };
        out.push(Listener { key: key(Role::ProxyPort), bind, backends: port.internal.clone(), affinity: port.affinity });
        if let Some(external) = &port.external {
            out.push(Listener { key: key(Role::ExternalProxyPort), bind, backends: external.clone(), affinity: port.affinity });
        }
    }
    out
}

/// `0.0.0.0` or `::`.
pub fn wildcard(family: IpFamily) -> IpAddr {
    match family {
        IpFamily::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpFamily::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

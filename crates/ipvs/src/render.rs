//! The pure renderer: one IP family of a [`model::Snapshot`] to the
//! [`IpvsState`] upstream's IPVS proxier would program for it — virtual
//! servers with their real servers, the addresses bound to `kube-ipvs0`,
//! the members of every ipset, and the companion iptables rules.
//!
//! Each service port is planned once ([`plan::PortPlan`], shared with
//! every mode) and rendered by one function per traffic kind
//! (`cluster_ip`, `external` for external and load-balancer IPs,
//! `node_port`), which add virtual servers, bind addresses and ipset
//! members to a `Builder`; `rules` then writes the iptables rules from
//! the sets, as upstream does after its service loop.

mod builder;
mod cluster_ip;
mod endpoints;
mod external;
mod node_port;
mod options;
pub(crate) mod rules;
mod state;

pub use options::RenderOptions;
pub use rules::render_rules;
pub use plan::NoLocalEndpoints;
pub use state::{DesiredService, IpvsState};

use builder::Builder;
use model::Snapshot;
use plan::PortPlan;

/// Renders `snapshot` for `opts.common.family`.
pub fn render(snapshot: &Snapshot, opts: &RenderOptions) -> IpvsState {
    let mut b = Builder::new(snapshot, opts);
    let family = b.ctx.family;
    for (name, svc) in &snapshot.services {
        if !family.contains(svc.cluster_ip) {
            continue;
        }
        // Real servers are sorted by address, so upstream's endpoint order
        // (and its copy) is not needed here.
        let eps = snapshot.endpoints_of(name);
        let plan = PortPlan::new(&b.ctx, svc, eps);
        b.record_no_local_endpoints(&plan);
        cluster_ip::render_loopback(&mut b, &plan, eps);
        cluster_ip::render_cluster_ip(&mut b, &plan);
        external::render_external_ips(&mut b, &plan);
        external::render_load_balancer_ips(&mut b, &plan);
        node_port::render_node_port(&mut b, &plan);
        node_port::render_health_check_node_port(&mut b, svc);
    }
    b.finish()
}

/// A virtual server as `ipvsadm -Ln` prints its line: `TCP  10.96.0.1:443
/// rr`, with ` persistent <timeout>` for ClientIP affinity.
pub fn ipvsadm_line(vs: &crate::VirtualServer) -> String {
    let mut line = format!("{}  {}", vs.key.protocol, socket_text(vs.key.address, vs.key.port));
    if vs.key.fwmark != 0 {
        line = format!("FWM  {}", vs.key.fwmark);
    }
    line.push(' ');
    line.push_str(&vs.scheduler);
    if vs.flags.contains(crate::ServiceFlags::SCHED_MH_PORT) && vs.scheduler == "mh" {
        line.push_str(" (mh-port)");
    }
    if vs.flags.contains(crate::ServiceFlags::PERSISTENT) {
        line.push_str(&format!(" persistent {}", vs.timeout));
    }
    line
}

fn socket_text(ip: std::net::IpAddr, port: u16) -> String {
    std::net::SocketAddr::new(ip, port).to_string()
}

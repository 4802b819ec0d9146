//! Userspace mode, as upstream's last userspace proxier (v1.25,
//! `pkg/proxy/userspace`) behaved for users, rebuilt on this project's
//! pipeline: every TCP and UDP service port gets a proxy port (a listener
//! of the `forward` crate on the node's wildcard address, its port from
//! `--proxy-port-range`), and iptables portal rules send the port's
//! ClusterIP, externalIP, LoadBalancer and NodePort traffic to it
//! (upstream's chains `KUBE-PORTALS-CONTAINER` / `KUBE-PORTALS-HOST`,
//! `KUBE-NODEPORT-CONTAINER` / `KUBE-NODEPORT-HOST` in nat,
//! `KUBE-NODEPORT-NON-LOCAL` in filter). The proxy itself opens the
//! connection to an endpoint, so the endpoint sees the node as the client.
//!
//! * [`render`] (pure): the listeners each service port needs, from
//!   `plan::PortPlan` (ready endpoints, affinity, traffic policies), and
//!   the portal rules for the ports the listeners were bound to.
//! * [`proxier`]: `proxier::Proxier` and `proxier::Cleanup`: each sync
//!   applies the listeners (`forward::Forwarder::apply`), renders the
//!   rules with the bound ports and hands them to `iptables-restore`
//!   (`xtables`), per IP family.

pub mod chains;
mod cleanup;
mod error;
pub mod proxier;
pub mod render;

pub use error::Error;

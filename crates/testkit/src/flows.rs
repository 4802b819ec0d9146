//! The reference packet-flow cases (upstream kube-proxy v1.36's
//! `flows.json` + the verdicts of `flows.txt`) as typed data, with the
//! reference node (node-a) as a [`TraceContext`], so one table of flows can
//! be run through the tracer against upstream's rules and ours.
//!
//! `flows.json` holds what each flow was (source, destination, protocol)
//! and what was observed (who answered, the source address the endpoint
//! saw, iptables counters); the stated verdict (the full DNAT set, masq
//! yes/no/only for hairpin, DROP vs no rule) is the `result` column of the
//! summary table in `flows.txt`, matched by flow id.
//!
//! [`TraceContext`]: crate::tracer::TraceContext

mod case;
mod expected;
mod load;
mod reference;
mod topology;

pub use case::{FlowCase, FlowSource, Observation, RuleHit};
pub use expected::{Expected, Masquerade};
pub use load::{iptables_flows, load_flows, nftables_flows};
pub use reference::{REFERENCE_DIR_ENV, read_reference, reference_dir};
pub use topology::{EXTERNAL_CLIENTS, NODE_A_ADDRESSES, NODE_A_IP, POD_CIDR, node_a};

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
//! The same flows can also be replayed for real ([`replay_all`]) in a
//! [`crate::reference_node::ReferenceNode`]: real connections through a
//! proxy running in node-a's namespace, checked against the same verdicts
//! ([`check`]), and traced ([`trace_all`], nftables: each path compared
//! with upstream's nft trace by [`check_paths`]) or counted ([`count_all`],
//! iptables: the moved rule counters compared with upstream's by
//! [`check_hits`]).
//!
//! The binary's `explain packet` is asked about every flow too
//! ([`explain_args`]) and its answer must be the flow's verdict
//! ([`check_explained`]) and what its traffic did
//! ([`check_explained_traffic`]).
//!
//! IPVS mode answers some flows otherwise by design: [`ipvs_flows`] are
//! the same flows with IPVS mode's verdicts ([`ipvs_differences`]).
//!
//! [`TraceContext`]: crate::tracer::TraceContext

mod case;
mod counters;
mod expected;
mod explained;
mod ipvs;
mod load;
mod paths;
mod probe;
mod reference;
mod replay;
mod topology;
mod traffic;
mod verdict;

pub use case::{FlowCase, FlowSource, Observation, RuleHit, TracedPath};
pub use counters::{RuleKey, check_hits, moved, rule_counters};
pub use expected::{Expected, Masquerade};
pub use explained::{check_explained, explain_args, explained_outcomes};
pub use ipvs::{IpvsDifference, ipvs_difference, ipvs_differences, ipvs_flows};
pub use load::{iptables_flows, load_flows, nftables_flows};
pub use reference::{REFERENCE_DIR_ENV, read_reference, reference_dir};
pub use paths::check_paths;
pub use probe::{Attempt, Icmp, Seen};
pub use replay::{GIVE_UP_AFTER, Replayed, TRACE_TRIES, TRIES, count_all, replay, replay_all, trace_all};
pub use topology::{
    CLIENT_POD, EXTERNAL_CLIENTS, EXTERNAL_ROUTES, NODE_A_ADDRESSES, NODE_A_EXT0, NODE_A_IP, POD_CIDR, POD_GATEWAY, node_a,
};
pub use traffic::check_explained_traffic;
pub use verdict::{check, check_dropped_in_node, check_passed_through_node, summary};

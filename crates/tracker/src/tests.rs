//! Unit tests of the tracker's rules, through its public API.

mod change_counts;
mod changes;
mod dual_stack;
mod endpoint_rules;
mod equivalence;
mod logging;
mod node_rules;
mod service_cidr_rules;
mod service_rules;
mod support;
mod topology_rules;

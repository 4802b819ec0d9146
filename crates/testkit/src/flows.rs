//! The reference packet-flow cases (upstream flows.json) as data.

//! Start-up: the conntrack sysctls of `--conntrack-*` / `conntrack:`, set
//! as upstream does; what the kernel refuses is a warning.

use crate::config::Config;
use conntrack::{ConntrackSettings, apply_conntrack_settings, conntrack_max};
use std::time::Duration;

/// Writes the configured conntrack sysctls.
pub fn apply(config: &Config) {
    for problem in apply_conntrack_settings(&settings(config)) {
        tracing::warn!("{problem}; leaving it as it is");
    }
}

fn settings(config: &Config) -> ConntrackSettings {
    let c = &config.conntrack;
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let secs = |d: Option<Duration>| d.map(|d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX));
    ConntrackSettings {
        max: conntrack_max(c.max_per_core, c.min, cpus),
        tcp_established: secs(c.tcp_established_timeout),
        tcp_close_wait: secs(c.tcp_close_wait_timeout),
        tcp_be_liberal: c.tcp_be_liberal,
        udp: secs(c.udp_timeout),
        udp_stream: secs(c.udp_stream_timeout),
    }
}

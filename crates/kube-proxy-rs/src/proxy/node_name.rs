//! The node this proxy serves: `--hostname-override`, else the host name,
//! lower-cased as upstream does.

use crate::config::Config;
use anyhow::Context;

/// The node name the tracker matches endpoints' `nodeName` against.
pub fn resolve(config: &Config) -> anyhow::Result<String> {
    let name = match &config.hostname_override {
        Some(name) if !name.trim().is_empty() => name.trim().to_string(),
        _ => std::fs::read_to_string("/proc/sys/kernel/hostname")
            .context("no --hostname-override and the host name cannot be read")?
            .trim()
            .to_string(),
    };
    Ok(name.to_lowercase())
}

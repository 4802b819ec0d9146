//! Waiting for the machine's CPUs to go idle before a timed run. The
//! kernel tears a network namespace down in a worker after `ip netns del`
//! returns, and a run stopped at its cap (upstream's table at 50,000
//! services) leaves a large table to tear down: a guard so that such work
//! cannot run into the next size's run (stop 38: a 100,000-service run
//! right after that one was the slowest of the evening; with the guard, no
//! run has had to wait yet).

use anyhow::{Context, Result};
use std::time::{Duration, Instant};

/// Idle share of all CPUs over one sample that counts as quiet.
const QUIET: f64 = 0.8;

/// One sample's length.
const SAMPLE: Duration = Duration::from_millis(500);

/// Waits until one [`SAMPLE`] of the CPUs is at least [`QUIET`] idle, or
/// `longest` has passed (another tenant's load need not end); returns
/// the idle share last seen and how long it waited.
pub fn wait_for_quiet(longest: Duration) -> Result<(f64, Duration)> {
    let started = Instant::now();
    loop {
        let before = cpu_ticks()?;
        std::thread::sleep(SAMPLE);
        let after = cpu_ticks()?;
        let total = after.0.saturating_sub(before.0).max(1);
        let idle = after.1.saturating_sub(before.1) as f64 / total as f64;
        if idle >= QUIET || started.elapsed() >= longest {
            return Ok((idle, started.elapsed()));
        }
    }
}

/// All CPUs' ticks and their idle ticks (idle and iowait), from the first
/// line of `/proc/stat`.
fn cpu_ticks() -> Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").context("read /proc/stat")?;
    let line = stat.lines().next().context("empty /proc/stat")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .context("parse /proc/stat")?;
    let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
    Ok((ticks.iter().sum(), idle))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_machines_ticks() {
        let (total, idle) = cpu_ticks().unwrap();
        assert!(total > 0 && idle <= total);
    }
}

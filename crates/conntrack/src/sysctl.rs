//! The conntrack sysctls upstream sets at start-up from `--conntrack-*`
//! (`conntrack:` in the config file): the table size (raised, never
//! lowered), TCP and UDP timeouts and `tcp_be_liberal`. Which values to
//! write is pure ([`ConntrackSettings::writes`]); [`apply_conntrack_settings`]
//! writes them, and a value the kernel will not take (nf_conntrack_max is
//! read-only inside a network namespace) is reported, not fatal, as
//! upstream logs it and carries on.

use std::path::{Path, PathBuf};

const SYSCTL_ROOT: &str = "/proc/sys/net/netfilter";
const HASHSIZE: &str = "/sys/module/nf_conntrack/parameters/hashsize";

/// What to set; `None` leaves the kernel's value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConntrackSettings {
    /// nf_conntrack_max: raised to this if lower (hashsize to a quarter).
    pub max: Option<u32>,
    /// nf_conntrack_tcp_timeout_established, seconds.
    pub tcp_established: Option<u32>,
    /// nf_conntrack_tcp_timeout_close_wait, seconds.
    pub tcp_close_wait: Option<u32>,
    /// nf_conntrack_tcp_be_liberal = 1.
    pub tcp_be_liberal: bool,
    /// nf_conntrack_udp_timeout, seconds.
    pub udp: Option<u32>,
    /// nf_conntrack_udp_timeout_stream, seconds.
    pub udp_stream: Option<u32>,
}

/// Upstream's table size: `max(max_per_core × cpus, min)`, or none when
/// `max_per_core` is 0.
pub fn conntrack_max(max_per_core: u32, min: u32, cpus: usize) -> Option<u32> {
    let cpus = u32::try_from(cpus).unwrap_or(u32::MAX);
    (max_per_core > 0).then(|| max_per_core.saturating_mul(cpus).max(min))
}

/// One value that could not be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysctlProblem {
    /// The file.
    pub path: PathBuf,
    /// The value wanted.
    pub value: u32,
    /// Why it was not written.
    pub error: String,
}

impl std::fmt::Display for SysctlProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot set {} to {}: {}", self.path.display(), self.value, self.error)
    }
}

/// How a value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// Set when different.
    Exact,
    /// Set only when the current value is lower.
    AtLeast,
}

impl ConntrackSettings {
    /// The files to write, each with its value and rule.
    fn writes(&self) -> Vec<(PathBuf, u32, Rule)> {
        let sysctl = |name: &str| Path::new(SYSCTL_ROOT).join(name);
        let mut out = Vec::new();
        if let Some(max) = self.max {
            out.push((sysctl("nf_conntrack_max"), max, Rule::AtLeast));
            out.push((PathBuf::from(HASHSIZE), max / 4, Rule::AtLeast));
        }
        let timeouts = [
            ("nf_conntrack_tcp_timeout_established", self.tcp_established),
            ("nf_conntrack_tcp_timeout_close_wait", self.tcp_close_wait),
            ("nf_conntrack_udp_timeout", self.udp),
            ("nf_conntrack_udp_timeout_stream", self.udp_stream),
        ];
        out.extend(timeouts.into_iter().filter_map(|(name, v)| v.filter(|v| *v > 0).map(|v| (sysctl(name), v, Rule::Exact))));
        if self.tcp_be_liberal {
            out.push((sysctl("nf_conntrack_tcp_be_liberal"), 1, Rule::Exact));
        }
        out
    }
}

/// Writes `settings` in the calling thread's network namespace; returns
/// what could not be written. The hash size follows the table size only
/// when that was written (as upstream; the kernel refuses both outside the
/// initial network namespace anyway).
pub fn apply_conntrack_settings(settings: &ConntrackSettings) -> Vec<SysctlProblem> {
    let mut problems: Vec<SysctlProblem> = Vec::new();
    for (path, value, rule) in settings.writes() {
        let max_refused = problems.iter().any(|p| p.path.ends_with("nf_conntrack_max"));
        if path == Path::new(HASHSIZE) && max_refused {
            continue;
        }
        if let Err(problem) = apply_one(&path, value, rule) {
            problems.push(problem);
        }
    }
    problems
}

fn apply_one(path: &Path, value: u32, rule: Rule) -> Result<(), SysctlProblem> {
    let problem = |error: String| SysctlProblem { path: path.to_path_buf(), value, error };
    let key = path.display().to_string();
    let current: u32 = host::sysctl::read(&key)
        .map_err(|e| problem(os_error(e)))?
        .parse()
        .map_err(|e: std::num::ParseIntError| problem(e.to_string()))?;
    let needed = match rule {
        Rule::Exact => current != value,
        Rule::AtLeast => current < value,
    };
    if needed {
        host::sysctl::write(&key, &value.to_string()).map_err(|e| problem(os_error(e)))?;
        tracing::info!(path = %path.display(), from = current, to = value, "set conntrack sysctl");
    }
    Ok(())
}

/// The OS error of a host failure (the problem already names the path).
fn os_error(err: host::Error) -> String {
    match err {
        host::Error::Sysctl { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_size_as_upstream() {
        assert_eq!(conntrack_max(32768, 131072, 2), Some(131072));
        assert_eq!(conntrack_max(32768, 131072, 8), Some(262144));
        assert_eq!(conntrack_max(0, 131072, 8), None);
        assert_eq!(conntrack_max(u32::MAX, 0, 4), Some(u32::MAX));
    }

    #[test]
    fn zero_timeouts_and_no_max_write_nothing() {
        let s = ConntrackSettings { tcp_established: Some(0), ..ConntrackSettings::default() };
        assert!(s.writes().is_empty());
    }

    #[test]
    fn max_raises_table_and_hash_size_only() {
        let s = ConntrackSettings { max: Some(262144), tcp_be_liberal: true, ..ConntrackSettings::default() };
        let writes: Vec<(String, u32, Rule)> = s.writes().into_iter().map(|(p, v, r)| (p.display().to_string(), v, r)).collect();
        assert_eq!(
            writes,
            vec![
                ("/proc/sys/net/netfilter/nf_conntrack_max".to_string(), 262144, Rule::AtLeast),
                (HASHSIZE.to_string(), 65536, Rule::AtLeast),
                ("/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal".to_string(), 1, Rule::Exact),
            ]
        );
    }
}

//! The proxy's one log line per sync (`synced iptables rules ip_family=… trigger=…
//! services=… render_ms=… apply_ms=… nat_rules=… nat_chains=…
//! filter_rules=…`, maybe `partial=…`; in nftables mode `synced nftables
//! rules … kernel_ms=… read_back_ms=… chains=… rules=… elements=…`; in
//! IPVS mode `synced IPVS rules … virtual_servers=… render_ms=… apply_ms=…`), read
//! back into numbers.

/// The message that marks a finished sync of the IPv4 rules (the load is
/// IPv4; a dual-stack host also logs the IPv6 proxier's syncs).
pub const SYNCED: &str = "synced iptables rules ip_family=IPv4";
/// The message that marks a finished sync in nftables mode.
pub const SYNCED_NFTABLES: &str = "synced nftables rules ip_family=IPv4";

/// The message that marks a finished sync in IPVS mode (on a kernel
/// without IPVS the proxy falls back to iptables mode and logs [`SYNCED`]).
pub const SYNCED_IPVS: &str = "synced IPVS rules ip_family=IPv4";
/// The message that marks a finished sync in userspace mode.
pub const SYNCED_USERSPACE: &str = "synced userspace proxy ports and portal rules ip_family=IPv4";
/// What every mode's message of a finished IPv4 sync holds.
pub const SYNCED_ANY_MODE: &str = " rules ip_family=IPv4";

/// The sync message of `--proxy-mode mode` (IPVS mode's fall-back
/// included: `ipvs` waits for iptables mode's message).
pub fn synced_message(mode: &str) -> &'static str {
    if mode == "nftables" {
        SYNCED_NFTABLES
    } else {
        SYNCED
    }
}

/// The sync message of `--proxy-mode mode` itself, no fall-back.
pub fn own_synced_message(mode: &str) -> &'static str {
    match mode {
        "ipvs" => SYNCED_IPVS,
        "userspace" => SYNCED_USERSPACE,
        other => synced_message(other),
    }
}

/// The manifests watcher's message once a changed file has been read and parsed.
pub const MANIFESTS_CHANGED: &str = "manifests changed";

/// The figures of one sync as the proxy logged them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncLine {
    /// Time spent rendering (ms).
    pub render_ms: f64,
    /// Time spent applying: `iptables-save`, `iptables-restore`, jumps (ms).
    pub apply_ms: f64,
    /// Rules written to the nat table.
    pub nat_rules: u64,
    /// Chains of ours in the nat table.
    pub nat_chains: u64,
    /// Rules written to the filter table.
    pub filter_rules: u64,
    /// The `partial=` field, when the proxy logs one.
    pub partial: Option<String>,
    /// nftables: the kernel's own time for the transaction(s) (ms).
    pub kernel_ms: f64,
    /// nftables: reading our table back before a full sync (ms).
    pub read_back_ms: f64,
    pub read_back_kernel_ms: f64,
    /// nftables: chains in our table.
    pub chains: u64,
    /// nftables: rules in our table.
    pub rules: u64,
    /// nftables: set and map elements in our table.
    pub elements: u64,
}

/// The value of `key=` in a tracing text line (values end at a space;
/// quotes are kept).
pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
}

fn number<T: std::str::FromStr + Default>(line: &str, key: &str) -> T {
    field(line, key)
        .and_then(|v| v.trim_matches('"').parse().ok())
        .unwrap_or_default()
}

/// Reads a sync line's figures (missing fields read as zero).
pub fn parse_sync_line(line: &str) -> SyncLine {
    SyncLine {
        render_ms: number(line, "render_ms"),
        apply_ms: number(line, "apply_ms"),
        nat_rules: number(line, "nat_rules"),
        nat_chains: number(line, "nat_chains"),
        filter_rules: number(line, "filter_rules"),
        partial: field(line, "partial").map(str::to_string),
        kernel_ms: number(line, "kernel_ms"),
        read_back_ms: number(line, "read_back_ms"),
        read_back_kernel_ms: number(line, "read_back_kernel_ms"),
        chains: number(line, "chains"),
        rules: number(line, "rules"),
        elements: number(line, "elements"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fields_of_a_sync_line() {
        let line = "2026-01-01T00:00:00.000001Z  INFO kube_proxy_rs::proxy::serve: synced iptables rules ip_family=IPv4 \
                    trigger=Changed services=1000 render_ms=12.5 apply_ms=301.25 nat_rules=32002 nat_chains=11004 \
                    filter_rules=5 partial=true";
        let sync = parse_sync_line(line);
        assert_eq!(sync.render_ms, 12.5);
        assert_eq!(sync.apply_ms, 301.25);
        assert_eq!(
            (sync.nat_rules, sync.nat_chains, sync.filter_rules),
            (32002, 11004, 5)
        );
        assert_eq!(sync.partial.as_deref(), Some("true"));
        assert_eq!(field(line, "services"), Some("1000"));
        assert_eq!(sync.kernel_ms, 0.0);
    }

    #[test]
    fn reads_the_fields_of_an_nftables_sync_line() {
        let line = "2026-01-01T00:00:00.000001Z  INFO kube_proxy_rs::proxy::serve: synced nftables rules ip_family=IPv4 \
                    trigger=Changed partial=false services=1000 render_ms=20.5 apply_ms=700.25 kernel_ms=610.5 \
                    read_back_ms=3.5 chains=2010 rules=4020 sets=1006 elements=1070 changes=9000";
        let sync = parse_sync_line(line);
        assert!(line.contains(synced_message("nftables")));
        assert!(!line.contains(synced_message("iptables")));
        assert_eq!(
            (
                sync.render_ms,
                sync.apply_ms,
                sync.kernel_ms,
                sync.read_back_ms
            ),
            (20.5, 700.25, 610.5, 3.5)
        );
        assert_eq!((sync.chains, sync.rules, sync.elements), (2010, 4020, 1070));
        assert_eq!(sync.partial.as_deref(), Some("false"));
    }

    #[test]
    fn tells_ipvs_mode_from_its_fall_back() {
        let line = "2026-01-01T00:00:00.000001Z  INFO kube_proxy_rs::proxy::serve: synced IPVS rules ip_family=IPv4 \
                    trigger=Changed services=2 virtual_servers=1 render_ms=0.5 apply_ms=12.5 nat_rules=20 filter_rules=5";
        assert!(line.contains(SYNCED_ANY_MODE) && line.contains(own_synced_message("ipvs")));
        assert!(
            !line.contains(synced_message("ipvs")),
            "a fall-back to iptables mode logs iptables mode's message"
        );
        assert_eq!(own_synced_message("nftables"), SYNCED_NFTABLES);
        assert_eq!(own_synced_message("iptables"), SYNCED);
        assert!(SYNCED.contains(SYNCED_ANY_MODE) && SYNCED_NFTABLES.contains(SYNCED_ANY_MODE));
    }
}

//! What the suite reads back: the proxy's resident memory, the timestamps
//! of its log lines, its `/healthz` and `/metrics` answers (from inside the
//! node's namespace), and the endpoints its rules DNAT to.

use crate::http;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use testkit::netns::Netns;

/// Where the proxy serves `/healthz` in the node's namespace.
pub const HEALTHZ: &str = "127.0.0.1:10256";
/// Where the proxy serves `/metrics` in the node's namespace.
pub const METRICS: &str = "127.0.0.1:10249";

/// The resident set size of process `pid`, in KiB (`VmRSS`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// RSS samples of one process over a scenario.
#[derive(Debug, Default)]
pub struct RssSeries {
    samples: Vec<(f64, u64)>,
}

impl RssSeries {
    /// Records the RSS of `pid` at `seconds` into the scenario.
    pub fn sample(&mut self, seconds: f64, pid: u32) {
        if let Some(kib) = rss_kib(pid) {
            self.samples.push((seconds, kib));
        }
    }

    /// The largest sample, in KiB.
    pub fn peak(&self) -> u64 {
        self.samples.iter().map(|s| s.1).max().unwrap_or(0)
    }

    /// The first sample, in KiB.
    pub fn first(&self) -> u64 {
        self.samples.first().map_or(0, |s| s.1)
    }

    /// The last sample, in KiB.
    pub fn last(&self) -> u64 {
        self.samples.last().map_or(0, |s| s.1)
    }

    /// `t=0s 21.3 MiB, t=5s 22.0 MiB, ...` (at most about 12 samples).
    pub fn summary(&self) -> String {
        let step = self.samples.len().div_ceil(12).max(1);
        let mut shown: Vec<&(f64, u64)> = self.samples.iter().step_by(step).collect();
        if let Some(last) = self.samples.last()
            && shown.last().is_none_or(|s| !std::ptr::eq(*s, last))
        {
            shown.push(last);
        }
        shown.iter().map(|(t, kib)| format!("t={t:.0}s {:.1} MiB", *kib as f64 / 1024.0)).collect::<Vec<_>>().join(", ")
    }
}

/// The time a log line of the proxy was written: its leading RFC 3339 UTC
/// timestamp (`2026-11-25T18:47:49.123456Z  INFO ...`).
pub fn log_time(line: &str) -> Option<SystemTime> {
    let stamp = line.split_whitespace().next()?.strip_suffix('Z')?;
    let (date, time) = stamp.split_once('T')?;
    let mut ymd = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
    let mut hms = time.split(':');
    let (h, min) = (hms.next()?.parse::<u64>().ok()?, hms.next()?.parse::<u64>().ok()?);
    let secs: f64 = hms.next()?.parse().ok()?;
    let days = u64::try_from(days_from_civil(y, m, d)).ok()?;
    let whole = days * 86_400 + h * 3_600 + min * 60;
    Some(UNIX_EPOCH + Duration::from_secs(whole) + Duration::from_secs_f64(secs))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `to - from` in seconds (negative when `to` is earlier).
pub fn seconds_between(from: SystemTime, to: SystemTime) -> f64 {
    match to.duration_since(from) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// The HTTP status of `GET /healthz` in `node`, or the reason it failed.
pub fn healthz_status(node: &Netns) -> Result<u16, String> {
    let answer = http::get(node, addr(HEALTHZ), "/healthz")?;
    answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| format!("no status in {answer:?}"))
}

/// The sum of every sample of metric `name` in a `/metrics` scrape of
/// `node` (0 when absent).
pub fn metric(node: &Netns, name: &str) -> Result<f64, String> {
    let text = http::get(node, addr(METRICS), "/metrics")?;
    Ok(text
        .lines()
        .filter(|l| l.strip_prefix(name).is_some_and(|rest| rest.starts_with(['{', ' '])))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

fn addr(text: &str) -> SocketAddr {
    text.parse().expect("a literal socket address")
}

/// Per service port name, the DNAT destinations its rules reach in an
/// `iptables-save -t nat` dump: its `KUBE-SERVICES` cluster IP rule (named
/// by its comment) → its `KUBE-SVC-` chain → the `KUBE-SEP-` chains it
/// jumps to → their DNATs. Endpoint chains carry no comment in large
/// clusters (over 1,000 endpoints, as upstream), so they are followed by name.
pub fn iptables_endpoints(nat: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut jumps: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut dnat: BTreeMap<&str, &str> = BTreeMap::new();
    let mut services: Vec<(String, &str)> = Vec::new();
    for line in nat.lines() {
        let Some(rest) = line.strip_prefix("-A ") else { continue };
        let chain = rest.split_whitespace().next().unwrap_or_default();
        let target = value_after(line, "-j ").unwrap_or_default();
        if let Some(dest) = value_after(line, "--to-destination ") {
            dnat.insert(chain, dest);
        } else if chain == "KUBE-SERVICES" && target.starts_with("KUBE-SVC-") {
            if let Some(name) = line.split_once("--comment ").and_then(|c| c.1.split_once(" cluster IP")) {
                services.push((name.0.trim_matches('"').to_string(), target));
            }
        } else if target.starts_with("KUBE-SEP-") {
            jumps.entry(chain).or_default().push(target);
        }
    }
    services
        .into_iter()
        .map(|(name, svc)| {
            let seps = jumps.get(svc).map(Vec::as_slice).unwrap_or_default();
            (name, seps.iter().filter_map(|sep| dnat.get(sep)).map(|d| (*d).to_string()).collect())
        })
        .filter(|(_, dests): &(String, BTreeSet<String>)| !dests.is_empty())
        .collect()
}

/// Per shared endpoint map (`service-endpoints-N`), each range's first key
/// and endpoint (`first-last : IP . PORT`, elements possibly on several lines).
fn shared_map_ranges(table: &str) -> BTreeMap<String, Vec<(u64, String)>> {
    let mut out: BTreeMap<String, Vec<(u64, String)>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in table.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("map ") {
            current = Some(name.trim_end_matches(" {").to_string()).filter(|n| n.starts_with("service-endpoints-"));
            continue;
        }
        if line == "}" {
            current = None;
        }
        let Some(map) = &current else { continue };
        let items = line.strip_prefix("elements = { ").unwrap_or(line).trim_end_matches(" }");
        for item in items.split(',').map(str::trim).filter(|i| i.contains(" : ")) {
            let Some((range, dest)) = item.split_once(" : ") else { continue };
            let Some(first) = range.split('-').next().and_then(|f| f.parse().ok()) else { continue };
            out.entry(map.clone()).or_default().push((first, dest.trim().replace(" . ", ":")));
        }
    }
    out
}

fn value_after<'a>(line: &'a str, flag: &str) -> Option<&'a str> {
    line.split_once(flag)?.1.split_whitespace().next()
}

/// Per service port name, the endpoint addresses in `nft list table ip
/// kube-proxy`: what the `service-…-NS/NAME/tcp/PORT` chain picks from
/// (its slot of a shared endpoint map, `numgen random mod 65536 offset K
/// map @service-endpoints-N`, or upstream's `numgen random mod N map { 0 :
/// IP . PORT, … }`; no affinity) or its
/// `endpoint-…-NS/NAME/tcp/PORT__IP/PORT` chains (affinity), or, for a
/// single-endpoint ClusterIP port without a chain, its element of
/// `service-ips-direct` (`IP . tcp . PORT comment "NS/NAME:PORT" : IP . PORT`).
pub fn nftables_endpoints(table: &str) -> BTreeMap<String, BTreeSet<String>> {
    let slots = shared_map_ranges(table);
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut in_service = None;
    let mut in_direct = false;
    for line in table.lines().map(str::trim) {
        if line.starts_with("map ") || line == "}" {
            in_direct = line == "map service-ips-direct {";
        }
        if in_direct {
            if let Some((port, dest)) = direct_element(line) {
                found.entry(port).or_default().insert(dest);
            }
        } else if let Some(name) = line.strip_prefix("chain ") {
            in_service = None;
            let name = name.trim_end_matches(" {");
            if let Some((port, dest)) = name.strip_prefix("endpoint-").and_then(endpoint_chain) {
                found.entry(port).or_default().insert(dest);
            } else if let Some(rest) = name.strip_prefix("service-") {
                in_service = rest.split_once('-').and_then(|(_, path)| port_name(path));
            }
        } else if let (Some(port), Some(map)) = (&in_service, value_after(line, "map @")) {
            let offset: u64 = value_after(line, " offset ").and_then(|o| o.parse().ok()).unwrap_or(0);
            let picked = slots.get(map).into_iter().flatten();
            let dests = picked.filter(|(first, _)| (offset..offset + 65536).contains(first)).map(|(_, d)| d.clone());
            found.entry(port.clone()).or_default().extend(dests);
        } else if let (Some(port), Some(map)) = (&in_service, line.split_once("map { ").map(|m| m.1)) {
            let elements = map.trim_end_matches('}').split(',');
            let dests = elements.filter_map(|e| Some(e.split_once(" : ")?.1.trim().replace(" . ", ":")));
            found.entry(port.clone()).or_default().extend(dests.filter(|d| !d.starts_with("goto ")));
        }
    }
    found
}

/// Per service port name (`name_of` a virtual server's address), the
/// real servers of weight above 0 in `ipvsadm -Ln` output; drained ones
/// (weight 0, graceful termination) are no longer where new connections go.
pub fn ipvs_endpoints(
    table: &str,
    name_of: impl Fn(std::net::Ipv4Addr) -> Option<String>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current = None;
    for line in table.lines() {
        if let Some(rest) = line.strip_prefix("TCP ") {
            let addr = rest.split_whitespace().next().and_then(|a| a.parse::<SocketAddr>().ok());
            current = match addr {
                Some(SocketAddr::V4(a)) => name_of(*a.ip()),
                _ => None,
            };
        } else if let (Some(name), Some(rest)) = (&current, line.trim_start().strip_prefix("->")) {
            let fields: Vec<&str> = rest.split_whitespace().collect();
            if let [dest, _forward, weight, ..] = fields[..]
                && weight.parse::<u32>().is_ok_and(|w| w > 0)
            {
                found.entry(name.clone()).or_default().insert(dest.to_string());
            }
        } else if !line.starts_with(' ') {
            current = None;
        }
    }
    found
}

/// The TCP virtual servers (`IP:PORT`) in `ipvsadm -Ln` output.
pub fn ipvs_virtual_servers(table: &str) -> BTreeSet<String> {
    table.lines().filter_map(|l| l.strip_prefix("TCP ")?.split_whitespace().next().map(String::from)).collect()
}

/// How many real servers in `ipvsadm -Ln` output have weight 0 (drained).
pub fn ipvs_drained(table: &str) -> usize {
    table
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("->"))
        .filter(|rest| rest.split_whitespace().nth(2) == Some("0"))
        .count()
}

/// `… comment "NS/NAME:PORT" : IP . PORT,` (a line of `service-ips-direct`'s
/// elements) → (`NS/NAME:PORT`, `IP:PORT`).
fn direct_element(line: &str) -> Option<(String, String)> {
    let (name, rest) = line.split_once("comment \"")?.1.split_once('"')?;
    let dest = rest.split_once(" : ")?.1.trim_end_matches([',', '}', ' ']);
    Some((name.to_string(), dest.replace(" . ", ":")))
}

/// `HASH-NS/NAME/tcp/PORT__IP/PORT` → (`NS/NAME:PORT`, `IP:PORT`).
fn endpoint_chain(name: &str) -> Option<(String, String)> {
    let (port, endpoint) = name.split_once('-')?.1.split_once("__")?;
    Some((port_name(port)?, endpoint.replacen('/', ":", 1)))
}

/// `NS/NAME/PROTO/PORT` → `NS/NAME:PORT`.
fn port_name(path: &str) -> Option<String> {
    let mut parts = path.split('/');
    let (ns, svc, _proto, port) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    Some(format!("{ns}/{svc}:{port}"))
}

#[test]
fn iptables_endpoints_follow_the_chains_with_or_without_comments() {
    let nat = "\
-A KUBE-SERVICES -d 10.96.0.10/32 -p tcp -m comment --comment \"rel/a:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-A
-A KUBE-SERVICES -d 10.96.0.11/32 -p tcp -m comment --comment \"rel/b:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-B
-A KUBE-SVC-A -m statistic --mode random --probability 0.5 -j KUBE-SEP-1
-A KUBE-SVC-A -j KUBE-SEP-2
-A KUBE-SEP-1 -p tcp -m tcp -j DNAT --to-destination 10.244.0.11:8080
-A KUBE-SEP-2 -p tcp -m comment --comment rel/a:http -m tcp -j DNAT --to-destination 10.244.0.12:8080
-A KUBE-SEP-3 -p tcp -m tcp -j DNAT --to-destination 10.244.0.13:8080
";
    let found = iptables_endpoints(nat);
    let want = BTreeSet::from(["10.244.0.11:8080".to_string(), "10.244.0.12:8080".to_string()]);
    assert_eq!(found, BTreeMap::from([("rel/a:http".to_string(), want)]), "b has no endpoint, SEP-3 is unused");
}

#[test]
fn ipvs_endpoints_are_the_real_servers_of_weight_above_zero() {
    let table = "\
IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.96.0.10:80 rr
  -> 10.244.0.11:8080             Masq    1      0          0
  -> 10.244.0.12:8080             Masq    0      0          1
TCP  10.96.0.11:80 rr
TCP  192.168.86.2:30080 rr
  -> 10.244.0.13:8080             Masq    1      0          0
";
    let name_of = |ip: std::net::Ipv4Addr| (ip.octets()[0] == 10).then(|| format!("svc-{}", ip.octets()[3]));
    let found = ipvs_endpoints(table, name_of);
    assert_eq!(found, BTreeMap::from([("svc-10".to_string(), BTreeSet::from(["10.244.0.11:8080".to_string()]))]));
    assert_eq!(ipvs_drained(table), 1);
    let servers = ["10.96.0.10:80", "10.96.0.11:80", "192.168.86.2:30080"].map(String::from);
    assert_eq!(ipvs_virtual_servers(table), BTreeSet::from(servers));
}

#[test]
fn log_times_are_read_as_utc() {
    let t = log_time("2026-11-25T18:47:49.250000Z  INFO runner: synced").unwrap();
    assert_eq!(t.duration_since(UNIX_EPOCH).unwrap().as_millis(), 1_795_632_469_250);
    assert!(log_time("synced without a stamp").is_none());
}

#[test]
fn nftables_endpoints_come_from_endpoint_chains_or_dnat_maps() {
    let table = "table ip kube-proxy {\n\tchain endpoint-34X2MHTE-storefront/cart/tcp/grpc__10.244.0.12/7000 {\n\t}\n}\n";
    let found = nftables_endpoints(table);
    assert_eq!(found["storefront/cart:grpc"], BTreeSet::from(["10.244.0.12:7000".to_string()]));
    let table = "\tchain service-VT5BMONE-rel/healthy-0/tcp/http {\n\t\tmeta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.244.0.11 . 8080, 1 : 10.244.0.12 . 8080 }\n\t}\n";
    let found = nftables_endpoints(table);
    assert_eq!(found["rel/healthy-0:http"], BTreeSet::from(["10.244.0.11:8080".to_string(), "10.244.0.12:8080".to_string()]));
    let table = "\tmap service-endpoints-0 {\n\t\ttypeof numgen random mod 65536 : ip daddr . th dport\n\t\tflags interval\n\t\telements = { 0-65535 : 10.244.0.9 . 80,\n\t\t\t     65536-98303 : 10.244.0.11 . 8080,\n\t\t\t     98304-131071 : 10.244.0.12 . 8080 }\n\t}\n\tchain service-VT5BMONE-rel/healthy-0/tcp/http {\n\t\tmeta l4proto tcp dnat ip to numgen random mod 65536 offset 65536 map @service-endpoints-0\n\t}\n";
    let found = nftables_endpoints(table);
    assert_eq!(found["rel/healthy-0:http"], BTreeSet::from(["10.244.0.11:8080".to_string(), "10.244.0.12:8080".to_string()]));
    let table = "\tmap service-ips-direct {\n\t\ttype ipv4_addr . inet_proto . inet_service : ipv4_addr . inet_service\n\t\telements = { 10.96.0.1 . tcp . 443 comment \"default/kubernetes:https\" : 192.168.77.1 . 6443,\n\t\t\t     10.96.10.160 . tcp . 80 comment \"storefront/reviews:http\" : 10.244.0.28 . 8080 }\n\t}\n";
    let found = nftables_endpoints(table);
    assert_eq!(found["default/kubernetes:https"], BTreeSet::from(["192.168.77.1:6443".to_string()]));
    assert_eq!(found["storefront/reviews:http"], BTreeSet::from(["10.244.0.28:8080".to_string()]));
}

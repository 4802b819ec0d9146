//! The members of our sets: what a render wants, or what `ipset save`
//! shows, with entries spelled as `ipset save` prints them.

use super::KubeSet;
use model::IpFamily;
use ipnet::IpNet;
use model::Protocol;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// Members of each of our sets for one IP family.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IpSets {
    /// The family (it decides the set names).
    pub family: IpFamily,
    members: BTreeMap<KubeSet, BTreeSet<String>>,
}

impl IpSets {
    /// No members, for `family`.
    pub fn new(family: IpFamily) -> Self {
        Self { family, members: BTreeMap::new() }
    }

    /// Adds `entry` (already spelled as `ipset save` prints it) to `set`.
    pub fn insert(&mut self, set: KubeSet, entry: String) {
        self.members.entry(set).or_default().insert(entry);
    }

    /// The members of `set`, sorted.
    pub fn members(&self, set: KubeSet) -> impl Iterator<Item = &str> {
        self.members.get(&set).into_iter().flatten().map(String::as_str)
    }

    /// Whether `set` has no member (upstream then leaves out the iptables
    /// rule matching it).
    pub fn set_is_empty(&self, set: KubeSet) -> bool {
        self.members.get(&set).is_none_or(BTreeSet::is_empty)
    }

    /// Whether `set` has `entry`.
    pub fn contains(&self, set: KubeSet, entry: &str) -> bool {
        self.members.get(&set).is_some_and(|m| m.contains(entry))
    }

    /// Total number of members.
    pub fn len(&self) -> usize {
        self.members.values().map(BTreeSet::len).sum()
    }

    /// No set has a member.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads our sets of this family out of `ipset save` output; sets of
    /// other owners are ignored.
    pub fn parse_save(family: IpFamily, text: &str) -> Self {
        let by_name: BTreeMap<String, KubeSet> = KubeSet::ALL.iter().map(|s| (s.name(family), *s)).collect();
        let mut sets = IpSets::new(family);
        for line in text.lines() {
            let mut words = line.split_whitespace();
            if words.next() != Some("add") {
                continue;
            }
            if let (Some(name), Some(entry)) = (words.next(), words.next())
                && let Some(set) = by_name.get(name)
            {
                sets.insert(*set, normalize_entry(entry));
            }
        }
        sets
    }
}

/// `ip,proto:port` (hash:ip,port).
pub fn ip_port(ip: IpAddr, protocol: Protocol, port: u16) -> String {
    format!("{ip},{protocol}:{port}")
}

/// `ip,proto:port,ip2` (hash:ip,port,ip).
pub fn ip_port_ip(ip: IpAddr, protocol: Protocol, port: u16, ip2: IpAddr) -> String {
    format!("{ip},{protocol}:{port},{ip2}")
}

/// `ip,proto:port,net` (hash:ip,port,net); a host-length net is printed
/// without its prefix, as `ipset save` does.
pub fn ip_port_net(ip: IpAddr, protocol: Protocol, port: u16, net: &IpNet) -> String {
    normalize_entry(&format!("{ip},{protocol}:{port},{}", net.trunc()))
}

/// A port (bitmap:port).
pub fn port(port: u16) -> String {
    port.to_string()
}

/// An address (hash:ip).
pub fn ip(ip: IpAddr) -> String {
    ip.to_string()
}

/// Drops a `/32` or `/128` suffix, which `ipset save` never prints.
fn normalize_entry(entry: &str) -> String {
    entry.strip_suffix("/32").or_else(|| entry.strip_suffix("/128")).unwrap_or(entry).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_only_our_sets_of_the_family() {
        let save = "create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536\n\
                    add KUBE-CLUSTER-IP 10.96.0.1,tcp:443\n\
                    add KUBE-NODE-PORT-TCP 30080\n\
                    add KUBE-6-CLUSTER-IP fd00::1,tcp:443\n\
                    add SOMEONE-ELSE 1.2.3.4\n";
        let sets = IpSets::parse_save(IpFamily::V4, save);
        assert!(sets.contains(KubeSet::ClusterIp, "10.96.0.1,tcp:443"));
        assert!(sets.contains(KubeSet::NodePortTcp, "30080"));
        assert_eq!(sets.len(), 2);
        let v6 = IpSets::parse_save(IpFamily::V6, save);
        assert_eq!(v6.members(KubeSet::ClusterIp).collect::<Vec<_>>(), ["fd00::1,tcp:443"]);
    }

    #[test]
    fn entries_are_spelled_as_ipset_save_prints_them() {
        let lb: IpAddr = "192.0.2.10".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let range: IpNet = "172.20.0.5/28".parse().unwrap_or_default();
        assert_eq!(ip_port_net(lb, Protocol::Tcp, 443, &range), "192.0.2.10,tcp:443,172.20.0.0/28");
        let host: IpNet = "192.168.86.2/32".parse().unwrap_or_default();
        assert_eq!(ip_port_net(lb, Protocol::Tcp, 443, &host), "192.0.2.10,tcp:443,192.168.86.2");
        assert_eq!(ip_port(lb, Protocol::Udp, 53), "192.0.2.10,udp:53");
    }
}

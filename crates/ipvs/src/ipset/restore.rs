//! `ipset restore` input: create our sets, add what is missing, delete what
//! is stale, in one batch. Pure.

use super::{IpSets, KubeSet};
use std::fmt::Write;

/// The `ipset restore -exist` batch that turns `current` into `desired`:
/// every set is created (a no-op if it exists), missing members added,
/// stale ones deleted. Empty sets are still created: the iptables rules and
/// the cleanup refer to them by name.
pub fn render_ipset_restore(desired: &IpSets, current: &IpSets) -> String {
    let family = desired.family;
    let mut out = String::new();
    for set in KubeSet::ALL {
        let name = set.name(family);
        let _ = writeln!(out, "create {name} {} {}", set.set_type().as_str(), set.create_options(family));
        for entry in desired.members(set).filter(|e| !current.contains(set, e)) {
            let _ = writeln!(out, "add {name} {entry}");
        }
        for entry in current.members(set).filter(|e| !desired.contains(set, e)) {
            let _ = writeln!(out, "del {name} {entry}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::IpFamily;

    #[test]
    fn adds_missing_and_deletes_stale_members_only() {
        let mut desired = IpSets::new(IpFamily::V4);
        desired.insert(KubeSet::ClusterIp, "10.96.0.1,tcp:443".into());
        desired.insert(KubeSet::ClusterIp, "10.96.0.10,udp:53".into());
        let mut current = IpSets::new(IpFamily::V4);
        current.insert(KubeSet::ClusterIp, "10.96.0.1,tcp:443".into());
        current.insert(KubeSet::NodePortTcp, "30080".into());
        let text = render_ipset_restore(&desired, &current);
        let changes: Vec<&str> = text.lines().filter(|l| !l.starts_with("create")).collect();
        assert_eq!(changes, ["add KUBE-CLUSTER-IP 10.96.0.10,udp:53", "del KUBE-NODE-PORT-TCP 30080"]);
        assert_eq!(text.lines().filter(|l| l.starts_with("create")).count(), KubeSet::ALL.len());
        assert!(text.contains("create KUBE-NODE-PORT-TCP bitmap:port range 0-65535\n"));
        assert!(text.contains("create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536\n"));
    }
}

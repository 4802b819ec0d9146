//! Pure comparisons of what a render wants with what the kernel has: which
//! virtual servers to add, change or delete, which real servers to add,
//! change, drain or delete, which addresses to bind or unbind.

use crate::{RealServer, VirtualServer};
use ipnet::IpNet;
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// What to do to the kernel's virtual servers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VirtualServerDiff {
    /// Missing: add.
    pub add: Vec<VirtualServer>,
    /// Present with other settings: update.
    pub update: Vec<VirtualServer>,
    /// Present but no longer wanted: delete.
    pub delete: Vec<VirtualServer>,
}

/// Compares `desired` with the kernel's `current` virtual servers. Only
/// `current` ones passing `ours` (this family, outside the excluded
/// CIDRs) may be deleted.
pub fn diff_virtual_servers<'a>(
    desired: impl IntoIterator<Item = &'a VirtualServer>,
    current: &[VirtualServer],
    ours: impl Fn(&VirtualServer) -> bool,
) -> VirtualServerDiff {
    let current_by_key: BTreeMap<_, _> = current.iter().map(|vs| (vs.key, vs)).collect();
    let mut diff = VirtualServerDiff::default();
    let mut wanted = BTreeSet::new();
    for vs in desired {
        wanted.insert(vs.key);
        match current_by_key.get(&vs.key) {
            None => diff.add.push(vs.clone()),
            Some(have) if !have.same_settings(vs) => diff.update.push(vs.clone()),
            Some(_) => {}
        }
    }
    diff.delete = current.iter().filter(|vs| !wanted.contains(&vs.key) && ours(vs)).cloned().collect();
    diff
}

/// Whether `addr` is inside one of `cidrs` (`--ipvs-exclude-cidrs`).
pub fn is_excluded(addr: IpAddr, cidrs: &[IpNet]) -> bool {
    cidrs.iter().any(|c| c.contains(&addr))
}

/// One change to a real server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RealServerChange {
    /// Add it.
    Add(RealServer),
    /// Change its weight or thresholds (also: back from draining).
    Update(RealServer),
    /// No longer wanted but still has connections: set its weight to 0 so
    /// it gets no new ones, and keep it for now.
    Drain(RealServer),
    /// Remove it.
    Delete(RealServer),
}

/// How removed real servers are retired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Graceful {
    /// Drain before deleting (TCP); UDP and SCTP real servers are deleted
    /// at once, as upstream does (`expire_nodest_conn` ends their flows).
    pub enabled: bool,
    /// Delete a draining real server after this long even if it still has
    /// connections.
    pub limit: Duration,
}

/// Compares the `desired` real servers of one virtual server with the
/// kernel's `current` ones. `draining_since` says when each draining real
/// server started draining.
pub fn diff_real_servers(
    desired: &[RealServer],
    current: &[RealServer],
    draining_since: &BTreeMap<SocketAddr, Instant>,
    now: Instant,
    graceful: Graceful,
) -> Vec<RealServerChange> {
    let current_by_addr: BTreeMap<SocketAddr, &RealServer> = current.iter().map(|rs| (rs.addr(), rs)).collect();
    let wanted: BTreeSet<SocketAddr> = desired.iter().map(RealServer::addr).collect();
    let mut changes = Vec::new();
    for rs in desired {
        match current_by_addr.get(&rs.addr()) {
            None => changes.push(RealServerChange::Add(rs.clone())),
            Some(have) if !have.same_settings(rs) => changes.push(RealServerChange::Update(rs.clone())),
            Some(_) => {}
        }
    }
    for rs in current.iter().filter(|rs| !wanted.contains(&rs.addr())) {
        changes.extend(retire(rs, draining_since.get(&rs.addr()), now, graceful));
    }
    changes
}

/// What to do with a real server that is no longer wanted.
fn retire(rs: &RealServer, since: Option<&Instant>, now: Instant, graceful: Graceful) -> Option<RealServerChange> {
    let idle = rs.active_conns == 0 && rs.inactive_conns == 0;
    let expired = since.is_some_and(|t| now.saturating_duration_since(*t) >= graceful.limit);
    if !graceful.enabled || idle || expired {
        return Some(RealServerChange::Delete(rs.clone()));
    }
    if rs.weight != 0 || since.is_none() {
        return Some(RealServerChange::Drain(RealServer { weight: 0, ..rs.clone() }));
    }
    None
}

/// Addresses to bind to and unbind from the dummy interface.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressDiff {
    /// Wanted, not there.
    pub bind: Vec<IpAddr>,
    /// There, no longer wanted.
    pub unbind: Vec<IpAddr>,
}

/// Compares `desired` with the addresses `current`ly on the dummy
/// interface; only addresses passing `ours` (this family) are unbound.
pub fn diff_addresses(desired: &BTreeSet<IpAddr>, current: &BTreeSet<IpAddr>, ours: impl Fn(&IpAddr) -> bool) -> AddressDiff {
    AddressDiff {
        bind: desired.difference(current).copied().collect(),
        unbind: current.difference(desired).copied().filter(|a| ours(a)).collect(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{IpProtocol, ServiceKey};

    fn rs(last: u8, weight: u32, active: u32, inactive: u32) -> RealServer {
        let mut r = RealServer::masquerade(IpAddr::from([10, 180, 0, last]), 8080);
        (r.weight, r.active_conns, r.inactive_conns) = (weight, active, inactive);
        r
    }

    const GRACEFUL: Graceful = Graceful { enabled: true, limit: Duration::from_secs(900) };

    #[test]
    fn adds_missing_and_updates_changed_real_servers() {
        let desired = [rs(1, 1, 0, 0), rs(2, 1, 0, 0)];
        let current = [rs(2, 0, 3, 0)];
        let changes = diff_real_servers(&desired, &current, &BTreeMap::new(), Instant::now(), GRACEFUL);
        assert_eq!(changes, [RealServerChange::Add(rs(1, 1, 0, 0)), RealServerChange::Update(rs(2, 1, 0, 0))]);
    }

    #[test]
    fn removed_real_server_with_connections_drains_then_goes() {
        let now = Instant::now();
        let busy = rs(3, 1, 2, 5);
        let changes = diff_real_servers(&[], std::slice::from_ref(&busy), &BTreeMap::new(), now, GRACEFUL);
        assert_eq!(changes, [RealServerChange::Drain(rs(3, 0, 2, 5))]);
        // Next sync: still busy, draining for a minute: nothing to do.
        let since = BTreeMap::from([(busy.addr(), now)]);
        let drained = rs(3, 0, 2, 5);
        let later = now + Duration::from_secs(60);
        assert!(diff_real_servers(&[], std::slice::from_ref(&drained), &since, later, GRACEFUL).is_empty());
        // Connections gone: delete.
        let idle = rs(3, 0, 0, 0);
        assert_eq!(diff_real_servers(&[], std::slice::from_ref(&idle), &since, later, GRACEFUL), [RealServerChange::Delete(idle)]);
        // Or the bound passed: delete anyway.
        let too_late = now + Duration::from_secs(900);
        assert_eq!(diff_real_servers(&[], std::slice::from_ref(&drained), &since, too_late, GRACEFUL), [RealServerChange::Delete(drained)]);
    }

    #[test]
    fn weight_zero_leftover_from_a_previous_run_starts_draining() {
        let changes = diff_real_servers(&[], &[rs(4, 0, 1, 0)], &BTreeMap::new(), Instant::now(), GRACEFUL);
        assert_eq!(changes, [RealServerChange::Drain(rs(4, 0, 1, 0))]);
    }

    #[test]
    fn udp_real_servers_are_deleted_at_once() {
        let udp = Graceful { enabled: false, ..GRACEFUL };
        let changes = diff_real_servers(&[], &[rs(5, 1, 4, 4)], &BTreeMap::new(), Instant::now(), udp);
        assert_eq!(changes, [RealServerChange::Delete(rs(5, 1, 4, 4))]);
    }

    #[test]
    fn virtual_servers_diff_respects_ownership() {
        let key = |last: u8| ServiceKey::new(IpAddr::from([172, 30, 0, last]), IpProtocol::Tcp, 80);
        let a = VirtualServer::new(key(1), "rr");
        let b = VirtualServer::new(key(2), "rr");
        let excluded = VirtualServer::new(key(3), "rr");
        let mut a_wlc = a.clone();
        a_wlc.scheduler = "wlc".into();
        let diff = diff_virtual_servers([&a_wlc], &[a, b.clone(), excluded.clone()], |vs| vs.key != excluded.key);
        assert_eq!(diff.add, []);
        assert_eq!(diff.update, [a_wlc]);
        assert_eq!(diff.delete, [b]);
    }

    #[test]
    fn addresses_diff_leaves_other_families_alone() {
        let want: BTreeSet<IpAddr> = [IpAddr::from([10, 96, 0, 1]), IpAddr::from([10, 96, 0, 2])].into();
        let have: BTreeSet<IpAddr> = [IpAddr::from([10, 96, 0, 2]), IpAddr::from([10, 96, 0, 3]), "fd00::1".parse().unwrap_or(IpAddr::from([0; 4]))].into();
        let diff = diff_addresses(&want, &have, |a| a.is_ipv4());
        assert_eq!(diff.bind, [IpAddr::from([10, 96, 0, 1])]);
        assert_eq!(diff.unbind, [IpAddr::from([10, 96, 0, 3])]);
    }
}

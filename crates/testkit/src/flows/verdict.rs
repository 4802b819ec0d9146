//! Whether what a replayed flow saw on a real kernel is what upstream
//! saw: the same DNAT set (one endpoint for a sticky service), the same
//! masquerading, REJECT (ICMP port-unreachable) vs DROP (silence) vs
//! delivered to the node itself (TCP RST).

use super::case::FlowCase;
use super::expected::{Expected, Masquerade};
use super::probe::Seen;
use super::topology::NODE_A_ADDRESSES;
use crate::reference_node::Passage;
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};

/// `Ok` if `seen` (every connection of a replay of `flow` from `source`)
/// matches the flow's expected verdict; else what differs.
pub fn check(flow: &FlowCase, source: IpAddr, seen: &[Seen]) -> Result<(), String> {
    if seen.is_empty() {
        return Err("nothing was sent".to_string());
    }
    match &flow.expected {
        Expected::Dnat { endpoints, masquerade, sticky } => check_dnat(endpoints, *masquerade, *sticky, source, seen),
        Expected::Drop => all(seen, "time out (DROP)", |s| matches!(s, Seen::TimedOut)),
        Expected::Reject => all(
            seen,
            "be refused by ICMP port-unreachable (REJECT)",
            |s| matches!(s, Seen::Refused(Some(icmp)) if icmp.is_port_unreachable()),
        ),
        Expected::DeliveredLocally => {
            all(seen, "be refused by the node itself (TCP RST, no ICMP)", |s| matches!(s, Seen::Refused(None)))
        }
        Expected::NoRule => {
            all(seen, "time out (no rule matched: left node-a unanswered)", |s| matches!(s, Seen::TimedOut))
        }
    }
}

/// For a flow upstream's rules dropped: its packets entered node-a and
/// none got through (left it or were delivered to it), so the silence is
/// a drop in node-a, not a loss beyond it.
pub fn check_dropped_in_node(passage: Passage) -> Result<(), String> {
    if passage.entered == 0 {
        return Err("silent, but the witness saw no packet of the flow enter node-a".to_string());
    }
    if passage.through > 0 {
        return Err(format!(
            "silent, but {} packet(s) got through node-a (left it or were delivered): lost beyond node-a, not dropped by its rules",
            passage.through
        ));
    }
    Ok(())
}

/// For a flow no rule of upstream's matched: its packets entered node-a
/// and left it (through its default route, where nobody answers).
pub fn check_passed_through_node(passage: Passage) -> Result<(), String> {
    if passage.entered == 0 || passage.through == 0 {
        return Err(format!(
            "silent, but {} packet(s) entered node-a and {} got through: dropped in node-a, not routed on unchanged",
            passage.entered, passage.through
        ));
    }
    Ok(())
}

fn all(seen: &[Seen], what: &str, ok: impl Fn(&Seen) -> bool) -> Result<(), String> {
    if seen.iter().all(ok) { Ok(()) } else { Err(format!("every connection should {what}")) }
}

fn check_dnat(
    endpoints: &BTreeSet<SocketAddr>,
    masquerade: Masquerade,
    sticky: bool,
    source: IpAddr,
    seen: &[Seen],
) -> Result<(), String> {
    let mut reached = BTreeSet::new();
    for s in seen {
        let Seen::Answered { ep, peer } = s else {
            return Err(format!("every connection should be answered by an endpoint, one was {s}"));
        };
        if !endpoints.contains(ep) {
            return Err(format!("{ep} answered, not one of the DNAT set"));
        }
        check_peer(masquerade, source, *ep, *peer)?;
        reached.insert(*ep);
    }
    if sticky && reached.len() != 1 {
        return Err(format!("sticky service: every connection should reach the same endpoint, reached {reached:?}"));
    }
    if !sticky && &reached != endpoints {
        let missed: Vec<_> = endpoints.difference(&reached).collect();
        return Err(format!("{} connections never reached {missed:?}", seen.len()));
    }
    Ok(())
}

/// The endpoint sees the client's own address when not masqueraded, an
/// address of node-a (not the client's) when masqueraded.
fn check_peer(masquerade: Masquerade, source: IpAddr, ep: SocketAddr, peer: IpAddr) -> Result<(), String> {
    let masqueraded = match masquerade {
        Masquerade::Yes => true,
        Masquerade::No => false,
        Masquerade::OnlyHairpin => ep.ip() == source,
    };
    let node_address = NODE_A_ADDRESSES.iter().any(|a| IpAddr::V4(*a) == peer);
    match (masqueraded, peer == source) {
        (true, false) if node_address => Ok(()),
        (true, _) => Err(format!("{ep} saw {peer}: should be masqueraded to a node-a address")),
        (false, true) => Ok(()),
        (false, false) => Err(format!("{ep} saw {peer}: should see the client {source} (no masquerade)")),
    }
}

/// What a replay saw, in one line: answers per endpoint with the peers
/// they saw, then failures by kind.
pub fn summary(seen: &[Seen]) -> String {
    let mut answers: BTreeMap<SocketAddr, (usize, BTreeSet<IpAddr>)> = BTreeMap::new();
    let mut others: BTreeMap<String, usize> = BTreeMap::new();
    for s in seen {
        match s {
            Seen::Answered { ep, peer } => {
                let entry = answers.entry(*ep).or_default();
                entry.0 += 1;
                entry.1.insert(*peer);
            }
            other => *others.entry(other.to_string()).or_default() += 1,
        }
    }
    let mut parts: Vec<String> = answers
        .iter()
        .map(|(ep, (n, peers))| {
            let peers: Vec<String> = peers.iter().map(IpAddr::to_string).collect();
            format!("{ep} x{n} (peer {})", peers.join(", "))
        })
        .collect();
    parts.extend(others.iter().map(|(what, n)| format!("{what} x{n}")));
    format!("{} connections: {}", seen.len(), parts.join("; "))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::flows::probe::Icmp;

    fn ep(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn answered(e: &str, peer: &str) -> Seen {
        Seen::Answered { ep: ep(e), peer: ip(peer) }
    }

    #[test]
    fn dnat_needs_the_whole_set_and_the_right_peer() {
        let set = BTreeSet::from([ep("10.244.0.11:8080"), ep("10.244.1.11:8080")]);
        let client = ip("10.244.0.200");
        let both = [answered("10.244.0.11:8080", "10.244.0.200"), answered("10.244.1.11:8080", "10.244.0.200")];
        assert!(check_dnat(&set, Masquerade::No, false, client, &both).is_ok());
        assert!(check_dnat(&set, Masquerade::Yes, false, client, &both).is_err());
        assert!(check_dnat(&set, Masquerade::No, true, client, &both).is_err(), "sticky needs one endpoint");
        assert!(check_dnat(&set, Masquerade::No, false, client, &both[..1]).is_err(), "one endpoint never reached");
        assert!(check_dnat(&set, Masquerade::No, true, client, &both[..1]).is_ok());
        let masq = [answered("10.244.0.11:8080", "10.244.0.1"), answered("10.244.1.11:8080", "10.244.0.1")];
        assert!(check_dnat(&set, Masquerade::Yes, false, client, &masq).is_ok());
        let foreign = [answered("10.244.0.11:8080", "172.20.0.10")];
        assert!(check_dnat(&set, Masquerade::Yes, true, client, &foreign).is_err(), "not a node address");
        let stray = [answered("10.244.2.11:8080", "10.244.0.200")];
        assert!(check_dnat(&set, Masquerade::No, true, client, &stray).is_err());
        let refused = [Seen::Refused(None)];
        assert!(check_dnat(&set, Masquerade::No, true, client, &refused).is_err());
    }

    #[test]
    fn hairpin_is_masqueraded_only_back_to_the_client() {
        let set = BTreeSet::from([ep("10.244.0.11:8080"), ep("10.244.1.11:8080")]);
        let me = ip("10.244.0.11");
        let ok = [answered("10.244.0.11:8080", "10.244.0.1"), answered("10.244.1.11:8080", "10.244.0.11")];
        assert!(check_dnat(&set, Masquerade::OnlyHairpin, false, me, &ok).is_ok());
        let unmasked = [answered("10.244.0.11:8080", "10.244.0.11"), answered("10.244.1.11:8080", "10.244.0.11")];
        assert!(check_dnat(&set, Masquerade::OnlyHairpin, false, me, &unmasked).is_err());
    }

    #[test]
    fn a_drop_happens_in_node_a() {
        assert!(check_dropped_in_node(Passage { entered: 3, through: 0 }).is_ok());
        assert!(check_dropped_in_node(Passage { entered: 3, through: 3 }).is_err());
        assert!(check_dropped_in_node(Passage { entered: 0, through: 0 }).is_err());
        assert!(check_passed_through_node(Passage { entered: 3, through: 3 }).is_ok());
        assert!(check_passed_through_node(Passage { entered: 3, through: 0 }).is_err());
    }

    #[test]
    fn summary_counts_answers_and_failures() {
        let seen = [
            answered("10.244.0.11:8080", "10.244.0.1"),
            answered("10.244.0.11:8080", "10.244.0.1"),
            Seen::TimedOut,
            Seen::Refused(Some(Icmp { from: "10.244.0.1".parse().unwrap(), kind: 3, code: 3 })),
        ];
        assert_eq!(
            summary(&seen),
            "4 connections: 10.244.0.11:8080 x2 (peer 10.244.0.1); refused (ICMP type 3 code 3 from 10.244.0.1) x1; timed out x1"
        );
    }
}

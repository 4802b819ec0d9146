//! Whether an `explain packet` answer is what a flow's traffic did,
//! read from the connections themselves rather than from the flow's
//! expected verdict: the endpoints reached and whether each saw the
//! client (masquerade), an ICMP port unreachable (reject), a TCP reset
//! from node-a (delivered to node-a itself), silence dropped in node-a or
//! routed on through it.

use super::case::FlowCase;
use super::expected::Expected;
use super::probe::Seen;
use super::topology::NODE_A_ADDRESSES;
use crate::reference_node::Passage;
use crate::tracer::{Outcome, Protocol, describe_outcomes};
use std::collections::BTreeSet;
use std::net::IpAddr;

/// `Ok` if `explained` (the endings of `explain packet` for `flow`) is
/// what `seen` (every connection of one replay of it, from `source`, with
/// the witness' `passage` when there is one) shows: every connection
/// answered and the endings are exactly the endpoints reached, each with
/// the masquerading its peer shows (a sticky service: the endpoint reached
/// is one of the endings, all of them DNATs); or every connection refused
/// by node-a itself (`local`), by ICMP port unreachable (`reject`; for UDP
/// also `local`: no socket there answers the same); or silence, dropped
/// in node-a (`drop`) or routed on through it (no rule: `accept`).
pub fn check_explained_traffic(
    flow: &FlowCase,
    source: IpAddr,
    seen: &[Seen],
    passage: Option<Passage>,
    explained: &BTreeSet<Outcome>,
) -> Result<(), String> {
    let differ = |what: String| {
        Err(format!("explain says {}, traffic {what}", describe_outcomes(explained)))
    };
    let Some(first) = seen.first() else { return Err("nothing was sent".to_string()) };
    if let Seen::Answered { .. } = first {
        let reached = reached(source, seen)?;
        let sticky = matches!(flow.expected, Expected::Dnat { sticky: true, .. });
        let all_dnat = explained.iter().all(|o| matches!(o, Outcome::Dnat { .. }));
        let fits = if sticky { all_dnat && reached.is_subset(explained) } else { reached == *explained };
        return if fits { Ok(()) } else { differ(format!("reached {}", describe_outcomes(&reached))) };
    }
    if seen.iter().any(|s| s != first) {
        return Err(format!("the connections went different ways ({first} and others): no one answer fits"));
    }
    let allowed: &[Outcome] = match first {
        Seen::Refused(None) => &[Outcome::Local],
        Seen::Refused(Some(icmp)) if icmp.is_port_unreachable() => match flow.protocol {
            Protocol::Udp => &[Outcome::Reject, Outcome::Local],
            _ => &[Outcome::Reject],
        },
        Seen::TimedOut => match passage {
            Some(p) if p.entered > 0 && p.through == 0 => &[Outcome::Drop],
            Some(p) if p.entered > 0 => &[Outcome::Accept { masquerade: false }, Outcome::Accept { masquerade: true }],
            _ => return Err(format!("silent, and the witness saw {passage:?}: not known where it ended")),
        },
        other => return Err(format!("traffic {other}: no ending of explain's fits")),
    };
    let fits = explained.len() == 1 && explained.iter().all(|o| allowed.contains(o));
    if fits { Ok(()) } else { differ(format!("was {first}")) }
}

/// Each endpoint an answered replay reached, masqueraded when its peer
/// was an address of node-a other than the client's.
fn reached(source: IpAddr, seen: &[Seen]) -> Result<BTreeSet<Outcome>, String> {
    seen.iter()
        .map(|s| match s {
            Seen::Answered { ep, peer } if *peer == source => Ok(Outcome::Dnat { to: *ep, masquerade: false }),
            Seen::Answered { ep, peer } if NODE_A_ADDRESSES.iter().any(|a| IpAddr::V4(*a) == *peer) => {
                Ok(Outcome::Dnat { to: *ep, masquerade: true })
            }
            Seen::Answered { ep, peer } => Err(format!("{ep} saw {peer}: neither the client {source} nor node-a")),
            other => Err(format!("some connections were answered, one was {other}")),
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::flows::load_flows;
    use crate::flows::probe::Icmp;

    fn flow(id: &str) -> FlowCase {
        load_flows("iptables").unwrap().into_iter().find(|f| f.id == id).unwrap()
    }

    fn dnat(to: &str, masquerade: bool) -> Outcome {
        Outcome::Dnat { to: to.parse().unwrap(), masquerade }
    }

    fn answered(ep: &str, peer: &str) -> Seen {
        Seen::Answered { ep: ep.parse().unwrap(), peer: peer.parse().unwrap() }
    }

    #[test]
    fn answers_must_be_the_endpoints_reached_with_their_masquerade() {
        let f = flow("F08");
        let client: IpAddr = "10.244.0.200".parse().unwrap();
        let seen = [answered("10.244.1.13:8080", "10.244.0.200"), answered("10.244.2.13:8080", "10.244.0.200")];
        let both = BTreeSet::from([dnat("10.244.1.13:8080", false), dnat("10.244.2.13:8080", false)]);
        assert!(check_explained_traffic(&f, client, &seen, None, &both).is_ok());
        let masqueraded = BTreeSet::from([dnat("10.244.1.13:8080", true), dnat("10.244.2.13:8080", true)]);
        assert!(check_explained_traffic(&f, client, &seen, None, &masqueraded).is_err());
        assert!(check_explained_traffic(&f, client, &seen[..1], None, &both).is_err(), "one never reached");
        let natted = [answered("10.244.1.13:8080", "10.244.0.1")];
        let one = BTreeSet::from([dnat("10.244.1.13:8080", true)]);
        assert!(check_explained_traffic(&f, client, &natted, None, &one).is_ok());
        let stranger = [answered("10.244.1.13:8080", "172.20.0.10")];
        assert!(check_explained_traffic(&f, client, &stranger, None, &one).is_err());
    }

    #[test]
    fn a_sticky_service_reaches_one_of_the_endings() {
        let f = flow("F06");
        let client: IpAddr = "10.244.0.200".parse().unwrap();
        let seen = vec![answered("10.244.2.12:7000", "10.244.0.200"); 3];
        let all = BTreeSet::from([
            dnat("10.244.0.12:7000", false),
            dnat("10.244.1.12:7000", false),
            dnat("10.244.2.12:7000", false),
        ]);
        assert!(check_explained_traffic(&f, client, &seen, None, &all).is_ok());
        let elsewhere = BTreeSet::from([dnat("10.244.0.12:7000", false)]);
        assert!(check_explained_traffic(&f, client, &seen, None, &elsewhere).is_err());
    }

    #[test]
    fn refusals_and_silence_are_told_apart() {
        let tcp = flow("F44");
        let udp = flow("F52");
        let client: IpAddr = "10.244.0.200".parse().unwrap();
        let icmp = [Seen::Refused(Some(Icmp { from: "10.96.10.90".parse().unwrap(), kind: 3, code: 3 }))];
        let rst = [Seen::Refused(None)];
        let one = |o: Outcome| BTreeSet::from([o]);
        assert!(check_explained_traffic(&tcp, client, &icmp, None, &one(Outcome::Reject)).is_ok());
        assert!(check_explained_traffic(&tcp, client, &icmp, None, &one(Outcome::Local)).is_err());
        assert!(check_explained_traffic(&udp, client, &icmp, None, &one(Outcome::Local)).is_ok());
        assert!(check_explained_traffic(&tcp, client, &rst, None, &one(Outcome::Local)).is_ok());
        assert!(check_explained_traffic(&tcp, client, &rst, None, &one(Outcome::Reject)).is_err());
        let silent = [Seen::TimedOut, Seen::TimedOut];
        let dropped = Some(Passage { entered: 2, through: 0 });
        let routed = Some(Passage { entered: 2, through: 2 });
        assert!(check_explained_traffic(&tcp, client, &silent, dropped, &one(Outcome::Drop)).is_ok());
        assert!(check_explained_traffic(&tcp, client, &silent, routed, &one(Outcome::Drop)).is_err());
        let no_rule = one(Outcome::Accept { masquerade: false });
        assert!(check_explained_traffic(&tcp, client, &silent, routed, &no_rule).is_ok());
        assert!(check_explained_traffic(&tcp, client, &silent, None, &no_rule).is_err(), "where it ended is unknown");
        assert!(check_explained_traffic(&tcp, client, &[Seen::TimedOut, Seen::Refused(None)], routed, &no_rule).is_err());
    }
}

//! A flow's stated verdict, read from the `result` column of the
//! `flows.txt` summary, and the tracer outcomes it stands for.

use crate::tracer::Outcome;
use anyhow::{Context, Result, bail};
use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};

/// Whether the endpoint sees the client's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Masquerade {
    /// `masq yes`: the endpoint sees a node address.
    Yes,
    /// `masq no`: the endpoint sees the client.
    No,
    /// `masq only for hairpin`: masqueraded only when DNATed back to the
    /// client itself.
    OnlyHairpin,
}

/// What upstream did with a flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// DNAT to one of `endpoints`.
    Dnat {
        /// Every endpoint a connection may reach.
        endpoints: BTreeSet<SocketAddr>,
        /// Masquerading.
        masquerade: Masquerade,
        /// Session affinity: each client sticks to one of them.
        sticky: bool,
    },
    /// Dropped (no reply).
    Drop,
    /// Rejected (ICMP port-unreachable).
    Reject,
    /// No kube-proxy rule matched: routed on unchanged.
    NoRule,
    /// Not DNATed: delivered to the node itself (nftables mode).
    DeliveredLocally,
}

impl Expected {
    /// Parses the `result` column, e.g. `DNAT {a:1, b:2}, masq no [observed]`.
    pub fn parse(result: &str) -> Result<Self> {
        let text = result.trim();
        if text.starts_with("DROP") {
            return Ok(Self::Drop);
        }
        if text.starts_with("REJECT") {
            return Ok(Self::Reject);
        }
        if text.starts_with("no kube-proxy rule matched") {
            return Ok(Self::NoRule);
        }
        if text.starts_with("not DNATed: delivered to node-a itself") {
            return Ok(Self::DeliveredLocally);
        }
        let Some(rest) = text.strip_prefix("DNAT ") else {
            bail!("unrecognised result `{text}`");
        };
        parse_dnat(rest).with_context(|| format!("result `{text}`"))
    }

    /// The tracer outcomes this verdict means for a client at `source`.
    pub fn outcomes(&self, source: IpAddr) -> BTreeSet<Outcome> {
        match self {
            Self::Dnat { endpoints, masquerade, .. } => endpoints
                .iter()
                .map(|to| Outcome::Dnat {
                    to: *to,
                    masquerade: match masquerade {
                        Masquerade::Yes => true,
                        Masquerade::No => false,
                        Masquerade::OnlyHairpin => to.ip() == source,
                    },
                })
                .collect(),
            Self::Drop => BTreeSet::from([Outcome::Drop]),
            Self::Reject => BTreeSet::from([Outcome::Reject]),
            Self::NoRule => BTreeSet::from([Outcome::Accept { masquerade: false }]),
            Self::DeliveredLocally => BTreeSet::from([Outcome::Local]),
        }
    }
}

/// `{a, b}, masq X` or `sticky to one of {a, b} (this run: a), masq X`.
fn parse_dnat(text: &str) -> Result<Expected> {
    let (sticky, text) = match text.strip_prefix("sticky to one of ") {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let open = text.find('{').context("no `{`")?;
    let close = text.find('}').context("no `}`")?;
    let endpoints = text[open + 1..close]
        .split(',')
        .map(|ep| ep.trim().parse::<SocketAddr>().with_context(|| format!("endpoint `{}`", ep.trim())))
        .collect::<Result<BTreeSet<_>>>()?;
    let masq = text[close..].split("masq ").nth(1).context("no `masq`")?;
    let masquerade = if masq.starts_with("yes") {
        Masquerade::Yes
    } else if masq.starts_with("no") {
        Masquerade::No
    } else if masq.starts_with("only for hairpin") {
        Masquerade::OnlyHairpin
    } else {
        bail!("unrecognised masquerade `{masq}`");
    };
    Ok(Expected::Dnat { endpoints, masquerade, sticky })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_kind_of_result() {
        let dnat = Expected::parse("DNAT {10.244.0.11:8080, 10.244.1.11:8080}, masq only for hairpin [observed]").unwrap();
        let Expected::Dnat { endpoints, masquerade, sticky } = &dnat else { panic!("{dnat:?}") };
        assert_eq!(endpoints.len(), 2);
        assert_eq!(*masquerade, Masquerade::OnlyHairpin);
        assert!(!sticky);
        let outcomes = dnat.outcomes("10.244.0.11".parse().unwrap());
        assert!(outcomes.contains(&Outcome::Dnat { to: "10.244.0.11:8080".parse().unwrap(), masquerade: true }));
        assert!(outcomes.contains(&Outcome::Dnat { to: "10.244.1.11:8080".parse().unwrap(), masquerade: false }));

        let sticky = Expected::parse("DNAT sticky to one of {10.244.0.12:7000, 10.244.1.12:7000} (this run: 10.244.0.12:7000), masq yes [observed]").unwrap();
        assert!(matches!(sticky, Expected::Dnat { sticky: true, masquerade: Masquerade::Yes, ref endpoints } if endpoints.len() == 2));
        assert_eq!(Expected::parse("DROP (no reply) [observed]").unwrap(), Expected::Drop);
        assert_eq!(Expected::parse("REJECT (ICMP port-unreachable) [observed]").unwrap(), Expected::Reject);
        assert_eq!(Expected::parse("no kube-proxy rule matched: the packet left").unwrap(), Expected::NoRule);
        assert!(Expected::parse("something else").is_err());
        assert!(Expected::parse("DNAT {10.244.0.11:8080}, masq maybe").is_err());
    }
}

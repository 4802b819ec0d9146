//! Address ranges of an interval set (`ip saddr != { … }`): merged as
//! `nft` merges them, printed as `nft` lists them (a prefix when aligned,
//! else `a-b`), and laid out as the kernel's interval elements.

use crate::render::statement::value;
use crate::{Element, Family};
use ipnet::IpNet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An inclusive address range of one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Interval {
    /// IPv6 (else IPv4).
    v6: bool,
    /// First address.
    first: u128,
    /// Last address.
    last: u128,
}

impl Interval {
    fn of_net(net: &IpNet) -> Self {
        match net.trunc() {
            IpNet::V4(n) => Self {
                v6: false,
                first: u128::from(u32::from(n.network())),
                last: u128::from(u32::from(n.broadcast())),
            },
            IpNet::V6(n) => Self {
                v6: true,
                first: u128::from(n.network()),
                last: u128::from(n.broadcast()),
            },
        }
    }

    fn addr(&self, n: u128) -> IpAddr {
        if self.v6 {
            IpAddr::V6(Ipv6Addr::from(n))
        } else {
            IpAddr::V4(Ipv4Addr::from(u32::try_from(n).unwrap_or(u32::MAX)))
        }
    }

    fn max(&self) -> u128 {
        if self.v6 {
            u128::MAX
        } else {
            u128::from(u32::MAX)
        }
    }

    /// The prefix length if the range is exactly one network.
    fn prefix_len(&self) -> Option<u8> {
        let size = self.last.checked_sub(self.first)?.checked_add(1);
        let bits: u32 = if self.v6 { 128 } else { 32 };
        match size {
            None => (self.first == 0).then_some(0),
            Some(size) if size.is_power_of_two() && self.first.is_multiple_of(size) => {
                u8::try_from(bits - size.trailing_zeros()).ok()
            }
            Some(_) => None,
        }
    }
}

/// `10.0.0.0/8`, `192.0.2.10` (a single address), `10.0.0.3-10.0.0.9`.
impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = if self.v6 { 128 } else { 32 };
        match self.prefix_len() {
            Some(len) if len == full => write!(f, "{}", self.addr(self.first)),
            Some(len) => write!(f, "{}/{len}", self.addr(self.first)),
            None => write!(f, "{}-{}", self.addr(self.first), self.addr(self.last)),
        }
    }
}

/// `nets` sorted and merged where they overlap or touch, as `nft`
/// merges the elements of an anonymous interval set.
pub fn merge(nets: &[IpNet]) -> Vec<Interval> {
    let mut all: Vec<Interval> = nets.iter().map(Interval::of_net).collect();
    all.sort();
    let mut out: Vec<Interval> = Vec::with_capacity(all.len());
    for iv in all {
        match out.last_mut() {
            Some(prev)
                if prev.v6 == iv.v6
                    && prev.last.checked_add(1).is_none_or(|next| iv.first <= next) =>
            {
                prev.last = prev.last.max(iv.last);
            }
            _ => out.push(iv),
        }
    }
    out
}

/// The kernel's elements for `ranges` (merged, of `family`): a start
/// element per range and an end marker one past it, led by an end marker
/// at the zero address when the first range does not start there (what
/// `nft` sends).
pub fn elements(family: Family, ranges: &[Interval]) -> Vec<Element> {
    let v6 = family == Family::Ip6;
    let zero = Interval {
        v6,
        first: 0,
        last: 0,
    };
    let mut out = Vec::with_capacity(ranges.len() * 2 + 1);
    if ranges.first().is_none_or(|r| r.first != 0) {
        out.push(Element::interval_end(vec![value(zero.addr(0))]));
    }
    for r in ranges.iter().filter(|r| r.v6 == v6) {
        out.push(Element::new(vec![value(r.addr(r.first))]));
        if r.last < r.max() {
            out.push(Element::interval_end(vec![value(r.addr(r.last + 1))]));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn adjacent_addresses_merge_like_nft() {
        let merged = merge(&nets(&[
            "192.168.86.0/24",
            "172.20.0.0/28",
            "192.0.2.10/32",
            "192.0.2.11/32",
        ]));
        let text: Vec<String> = merged.iter().map(ToString::to_string).collect();
        assert_eq!(text, ["172.20.0.0/28", "192.0.2.10/31", "192.168.86.0/24"]);
        let unaligned = merge(&nets(&["10.0.0.3/32", "10.0.0.4/30", "10.0.0.8/32"]));
        assert_eq!(unaligned[0].to_string(), "10.0.0.3-10.0.0.8");
        let contained = merge(&nets(&["10.0.0.0/8", "10.1.0.0/16"]));
        assert_eq!(contained.len(), 1);
    }

    #[test]
    fn elements_are_starts_and_end_markers() {
        let ranges = merge(&nets(&["172.20.0.0/28", "192.168.86.0/24"]));
        let els = elements(Family::Ip, &ranges);
        let ip = |s: &str| value(s.parse().unwrap());
        assert_eq!(
            els,
            vec![
                Element::interval_end(vec![ip("0.0.0.0")]),
                Element::new(vec![ip("172.20.0.0")]),
                Element::interval_end(vec![ip("172.20.0.16")]),
                Element::new(vec![ip("192.168.86.0")]),
                Element::interval_end(vec![ip("192.168.87.0")]),
            ]
        );
        let everything = elements(Family::Ip, &merge(&nets(&["0.0.0.0/0"])));
        assert_eq!(everything, vec![Element::new(vec![ip("0.0.0.0")])]);
    }
}

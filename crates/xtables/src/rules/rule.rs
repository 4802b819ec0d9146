//! One typed rule: the chain it is in, its matches (text, in the order
//! `iptables-save` prints them) and its target as a value. Its line of
//! `iptables-restore` input is what [`Rule::write_line`] and
//! [`fmt::Display`] write.
//!
//! Measured layout: one heap allocation per rule, as when rules were
//! plain lines, of exactly the rule's length (48 bytes inline). It holds
//! the line as `iptables-save` prints it, spelled once when the rule is
//! built (writing and hashing a rule copy it; a sync walks the rules more
//! than once); the chain's and the matches' ends and the target's value
//! sit beside it, so reading a rule's chain or target never parses text.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// A rule of one of our chains (see the module doc). Built with
/// [`Rule::new`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rule {
    /// The line: chain name, matches and target, each match and the
    /// target with its leading space.
    text: Box<str>,
    /// End of the chain name in `text`.
    chain_end: u32,
    /// End of the matches in `text` (where the target starts).
    matches_end: u32,
    /// The target; a jump's or goto's chain name is in `text`.
    target: Stored,
}

/// Where a rule sends matching packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target<'a> {
    /// No target: the rule only counts (or only carries a comment).
    None,
    /// `-j CHAIN`: to another chain, returning after it.
    Jump(&'a str),
    /// `-g CHAIN`: to another chain, not returning.
    Goto(&'a str),
    /// `-j ACCEPT`
    Accept,
    /// `-j DROP`
    Drop,
    /// `-j RETURN`
    Return,
    /// `-j REJECT --reject-with ...`
    Reject(RejectWith),
    /// `-j DNAT --to-destination ADDR:PORT` (`[ADDR]:PORT` for IPv6).
    Dnat(SocketAddr),
    /// `-j REDIRECT --to-ports PORT`: to this port on the address the
    /// packet came in on (userspace mode's portals).
    Redirect(u16),
    /// `-j MASQUERADE`, with `--random-fully` when set.
    Masquerade {
        /// Fully randomised source ports.
        random_fully: bool,
    },
    /// `-j MARK --set-xmark VALUE/MASK`.
    SetXmark {
        /// Bits to set.
        value: u32,
        /// Bits to clear before setting.
        mask: u32,
    },
}

/// The ICMP error a `REJECT` answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectWith {
    /// `icmp-port-unreachable` (IPv4's default).
    IcmpPortUnreachable,
    /// `icmp6-port-unreachable` (IPv6's default).
    Icmp6PortUnreachable,
}

impl RejectWith {
    /// The option's value as iptables-save prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectWith::IcmpPortUnreachable => "icmp-port-unreachable",
            RejectWith::Icmp6PortUnreachable => "icmp6-port-unreachable",
        }
    }
}

/// A target as stored: the chain name of a jump or goto lives in the
/// rule's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Stored {
    None,
    Jump,
    Goto,
    Accept,
    Drop,
    Return,
    Reject(RejectWith),
    /// The address and port of a `DNAT` apart: 20 bytes, not 32.
    Dnat { ip: IpAddr, port: u16 },
    Redirect(u16),
    Masquerade { random_fully: bool },
    SetXmark { value: u32, mask: u32 },
}

impl<'a> Target<'a> {
    /// The chain this target enters, for a jump or goto.
    pub fn chain(&self) -> Option<&'a str> {
        match *self {
            Target::Jump(chain) | Target::Goto(chain) => Some(chain),
            _ => None,
        }
    }

    /// Splits off the chain name of a jump or goto.
    fn split(self) -> (Stored, &'a str) {
        let stored = match self {
            Target::None => Stored::None,
            Target::Jump(chain) => return (Stored::Jump, chain),
            Target::Goto(chain) => return (Stored::Goto, chain),
            Target::Accept => Stored::Accept,
            Target::Drop => Stored::Drop,
            Target::Return => Stored::Return,
            Target::Reject(with) => Stored::Reject(with),
            Target::Dnat(to) => Stored::Dnat { ip: to.ip(), port: to.port() },
            Target::Redirect(port) => Stored::Redirect(port),
            Target::Masquerade { random_fully } => Stored::Masquerade { random_fully },
            Target::SetXmark { value, mask } => Stored::SetXmark { value, mask },
        };
        (stored, "")
    }
}

impl fmt::Display for Target<'_> {
    /// The target's options with their leading space, as iptables-save
    /// prints them (` -j DNAT --to-destination 10.0.0.1:80`); empty for
    /// [`Target::None`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::None => Ok(()),
            Target::Jump(chain) => write!(f, " -j {chain}"),
            Target::Goto(chain) => write!(f, " -g {chain}"),
            Target::Accept => f.write_str(" -j ACCEPT"),
            Target::Drop => f.write_str(" -j DROP"),
            Target::Return => f.write_str(" -j RETURN"),
            Target::Reject(with) => write!(f, " -j REJECT --reject-with {}", with.as_str()),
            Target::Dnat(to) => write!(f, " -j DNAT --to-destination {to}"),
            Target::Redirect(port) => write!(f, " -j REDIRECT --to-ports {port}"),
            Target::Masquerade { random_fully: false } => f.write_str(" -j MASQUERADE"),
            Target::Masquerade { random_fully: true } => f.write_str(" -j MASQUERADE --random-fully"),
            Target::SetXmark { value, mask } => write!(f, " -j MARK --set-xmark {value:#x}/{mask:#x}"),
        }
    }
}

impl Rule {
    /// A rule from its parts: `text` holds the chain name then the matches
    /// (each with its leading space), `chain_end` where the name ends
    /// (tests; the builder spells the whole line itself).
    #[cfg(test)]
    pub(crate) fn from_parts(mut text: String, chain_end: usize, target: Target<'_>) -> Self {
        let matches_end = text.len();
        push_target(&mut text, target);
        Self::from_line(text, chain_end, matches_end, target)
    }

    /// A rule from its whole line (`text`, spelled by [`push_target`] after
    /// the matches), the ends of its chain name and matches, and its target.
    pub(crate) fn from_line(text: String, chain_end: usize, matches_end: usize, target: Target<'_>) -> Self {
        let (stored, _) = target.split();
        Self { text: text.into_boxed_str(), chain_end: offset(chain_end), matches_end: offset(matches_end), target: stored }
    }

    /// The chain the rule is in.
    pub fn chain(&self) -> &str {
        self.text.get(..self.chain_end as usize).unwrap_or_default()
    }

    /// The matches, each with its leading space, in iptables-save's order.
    pub fn matches(&self) -> &str {
        self.text.get(self.chain_end as usize..self.matches_end as usize).unwrap_or_default()
    }

    /// Where the rule sends matching packets.
    pub fn target(&self) -> Target<'_> {
        // After ` -j ` or ` -g `.
        let chain = self.text.get(self.matches_end as usize + 4..).unwrap_or_default();
        match self.target {
            Stored::None => Target::None,
            Stored::Jump => Target::Jump(chain),
            Stored::Goto => Target::Goto(chain),
            Stored::Accept => Target::Accept,
            Stored::Drop => Target::Drop,
            Stored::Return => Target::Return,
            Stored::Reject(with) => Target::Reject(with),
            Stored::Dnat { ip, port } => Target::Dnat(SocketAddr::new(ip, port)),
            Stored::Redirect(port) => Target::Redirect(port),
            Stored::Masquerade { random_fully } => Target::Masquerade { random_fully },
            Stored::SetXmark { value, mask } => Target::SetXmark { value, mask },
        }
    }

    /// The rule as `iptables-save` prints it, without the leading `-A `
    /// and without a newline: `CHAIN <matches> -j TARGET`.
    pub fn line(&self) -> &str {
        &self.text
    }

    /// Appends [`Rule::line`] to `out`.
    pub fn write_line(&self, out: &mut String) {
        out.push_str(&self.text);
    }
}

impl fmt::Display for Rule {
    /// The rule as [`Rule::line`] spells it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Appends `target` as a rule line ends with it: ` -j KUBE-SVC-X`,
/// ` -j DNAT --to-destination 10.0.0.1:80`, nothing for [`Target::None`].
pub(crate) fn push_target(out: &mut String, target: Target<'_>) {
    match target {
        Target::Jump(chain) => {
            out.push_str(" -j ");
            out.push_str(chain);
        }
        target => {
            use std::fmt::Write;
            let _ = write!(out, "{target}");
        }
    }
}

/// An offset into a rule's text (rules are far shorter than 4 GiB).
fn offset(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_read_back_without_parsing_and_print_in_order() {
        let rule = Rule::from_parts("KUBE-SVC-X -m comment --comment x".into(), 10, Target::Jump("KUBE-SEP-Y"));
        assert_eq!(rule.chain(), "KUBE-SVC-X");
        assert_eq!(rule.matches(), " -m comment --comment x");
        assert_eq!(rule.target(), Target::Jump("KUBE-SEP-Y"));
        assert_eq!(rule.target().chain(), Some("KUBE-SEP-Y"));
        assert_eq!(rule.to_string(), "KUBE-SVC-X -m comment --comment x -j KUBE-SEP-Y");
        assert_eq!(rule.line(), rule.to_string());
        let mut line = String::new();
        rule.write_line(&mut line);
        assert_eq!(line, rule.to_string());
    }

    #[test]
    fn a_rule_stays_small() {
        assert!(std::mem::size_of::<Rule>() <= 48, "{}", std::mem::size_of::<Rule>());
    }

    #[test]
    fn built_in_targets_print_their_options() {
        let cases = [
            (Target::None, ""),
            (Target::Goto("KUBE-X"), " -g KUBE-X"),
            (Target::Reject(RejectWith::Icmp6PortUnreachable), " -j REJECT --reject-with icmp6-port-unreachable"),
            (Target::Dnat("[fd00::1]:80".parse().unwrap_or(SocketAddr::from(([0; 4], 0)))), " -j DNAT --to-destination [fd00::1]:80"),
            (Target::Masquerade { random_fully: true }, " -j MASQUERADE --random-fully"),
            (Target::SetXmark { value: 0x4000, mask: 0 }, " -j MARK --set-xmark 0x4000/0x0"),
        ];
        for (target, want) in cases {
            assert_eq!(target.to_string(), want);
            let rule = Rule::from_parts("C".into(), 1, target);
            assert_eq!(rule.to_string(), format!("C{want}"));
            assert_eq!(rule.target(), target);
            assert_eq!(target.chain(), if want.starts_with(" -g") { Some("KUBE-X") } else { None });
        }
    }
}

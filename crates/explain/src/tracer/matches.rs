//! Matches: what each one needs from the packet and its connection, and
//! whether it holds. Matches that depend on something a trace cannot know
//! (`statistic` chance, `recent` history, an unknown interface) answer
//! [`Tri::Either`] and the walker explores both answers.

use super::context::TraceContext;
use super::error::TraceError;
use super::flight::{Flight, Iface};
use super::ipset::{Dim, Key};
use super::packet::Protocol;
use super::rule::{Opt, Problem};
use ipnet::IpNet;
use std::net::IpAddr;

/// The value of `-p`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtoSpec {
    /// `all` / `0`
    All,
    /// `tcp`, `udp`, `sctp` (or their numbers).
    Known(Protocol),
    /// Any other protocol (`icmp` ...): never one a traced packet has.
    Other(String),
}

impl ProtoSpec {
    /// Parses a protocol name or number.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text.to_ascii_lowercase().as_str() {
            "all" | "0" => Self::All,
            "tcp" | "6" => Self::Known(Protocol::Tcp),
            "udp" | "17" => Self::Known(Protocol::Udp),
            "sctp" | "132" => Self::Known(Protocol::Sctp),
            other @ ("icmp" | "1" | "icmpv6" | "ipv6-icmp" | "58" | "esp" | "ah" | "gre" | "udplite") => {
                Self::Other(other.to_string())
            }
            _ => return None,
        })
    }

    fn matches(&self, protocol: Protocol) -> bool {
        match self {
            Self::All => true,
            Self::Known(p) => *p == protocol,
            Self::Other(_) => false,
        }
    }

    /// The match module `-p tcp` loads implicitly.
    pub(crate) fn implicit_module(&self) -> Option<&'static str> {
        match self {
            Self::Known(p) => Some(p.as_lower()),
            _ => None,
        }
    }
}

/// Which address or port of the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Source.
    Src,
    /// Destination.
    Dst,
}

/// `-m addrtype` address types the tracer models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrType {
    /// One of the node's addresses.
    Local,
    /// Any other unicast address.
    Unicast,
    /// 255.255.255.255.
    Broadcast,
    /// 224.0.0.0/4, ff00::/8.
    Multicast,
}

/// Conntrack states of `--ctstate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtState {
    /// NEW
    New,
    /// ESTABLISHED
    Established,
    /// RELATED
    Related,
    /// INVALID
    Invalid,
    /// UNTRACKED
    Untracked,
    /// SNAT (virtual: source was rewritten)
    Snat,
    /// DNAT (virtual: destination was rewritten)
    Dnat,
}

/// `-m statistic` modes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Statistic {
    /// `--mode random --probability p`
    Random(f64),
    /// `--mode nth --every n`
    Nth(u32),
}

/// `-m recent` actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecentAction {
    /// `--set`: records the address, always matches.
    Set,
    /// `--rcheck`: seen before?
    Check,
    /// `--update`: seen before? (and refresh)
    Update,
    /// `--remove`: seen before? (and forget)
    Remove,
}

/// One match of a rule. `negated` is the rule's `!` before the option.
#[derive(Debug, Clone, PartialEq)]
pub enum Match {
    /// `[!] -s net`
    Source {
        /// Source prefix.
        net: IpNet,
        /// `!`
        negated: bool,
    },
    /// `[!] -d net`
    Destination {
        /// Destination prefix.
        net: IpNet,
        /// `!`
        negated: bool,
    },
    /// `[!] -p proto`
    Protocol {
        /// The protocol.
        spec: ProtoSpec,
        /// `!`
        negated: bool,
    },
    /// `[!] -i name` (a `+` suffix is a prefix wildcard).
    InInterface {
        /// Interface name or `prefix+`.
        name: String,
        /// `!`
        negated: bool,
    },
    /// `[!] -o name`
    OutInterface {
        /// Interface name or `prefix+`.
        name: String,
        /// `!`
        negated: bool,
    },
    /// `-m tcp` / `-m udp` / `-m sctp`: the packet has that protocol.
    L4(Protocol),
    /// `[!] --dport a[:b]` / `--sport` of `-m tcp|udp|sctp`.
    Port {
        /// The module's protocol.
        protocol: Protocol,
        /// Source or destination port.
        side: Side,
        /// First port of the range.
        first: u16,
        /// Last port of the range (= first for one port).
        last: u16,
        /// `!`
        negated: bool,
    },
    /// `[!] --syn`: a new TCP connection's first packet is a SYN.
    Syn {
        /// `!`
        negated: bool,
    },
    /// `-m multiport [!] --dports/--sports/--ports list`.
    Multiport {
        /// Which port; `None` (`--ports`) = either.
        side: Option<Side>,
        /// Port ranges.
        ranges: Vec<(u16, u16)>,
        /// `!`
        negated: bool,
    },
    /// `-m comment --comment text`: always matches.
    Comment(String),
    /// `-m addrtype [!] --src-type/--dst-type T[,T]`
    AddrType {
        /// Which address.
        side: Side,
        /// Any of these types.
        types: Vec<AddrType>,
        /// `!`
        negated: bool,
    },
    /// `-m conntrack [!] --ctstate S[,S]` (or `-m state --state`).
    CtState {
        /// Any of these states.
        states: Vec<CtState>,
        /// `!`
        negated: bool,
    },
    /// `-m mark [!] --mark value[/mask]`
    Mark {
        /// Expected value of the masked mark.
        value: u32,
        /// Mask (all ones if not given).
        mask: u32,
        /// `!`
        negated: bool,
    },
    /// `-m statistic`: may or may not match.
    Statistic {
        /// Mode and parameter.
        mode: Statistic,
        /// `!`
        negated: bool,
    },
    /// `-m recent`: `--set` always matches; checks may hit or miss.
    Recent {
        /// What the match does.
        action: RecentAction,
        /// `--name` (default `DEFAULT`).
        name: String,
        /// `!`
        negated: bool,
    },
    /// `-m nfacct --nfacct-name`: a counter, always matches.
    Nfacct(String),
    /// `-m physdev [!] --physdev-is-in|--physdev-is-out|--physdev-is-bridged`:
    /// the packet crossed a bridge port. Traced packets are routed, never
    /// bridged, so the option itself never holds.
    Physdev {
        /// The option.
        option: String,
        /// `!`
        negated: bool,
    },
    /// `-m set [!] --match-set NAME src|dst[,...]`
    Set {
        /// The ipset.
        name: String,
        /// Which address/port each dimension of the set is looked up with.
        flags: Vec<Side>,
        /// `!`
        negated: bool,
    },
}

/// A match's answer for one packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tri {
    Yes,
    No,
    /// Could be either; the text says what was assumed.
    Either(String),
}

impl Tri {
    fn of(holds: bool) -> Self {
        if holds { Tri::Yes } else { Tri::No }
    }

    fn branch(negated: bool, what: String) -> Self {
        Tri::Either(if negated { format!("! {what}") } else { what })
    }
}

/// Parses the options of `-m module`.
pub(crate) fn parse_module(module: &str, opts: &[Opt]) -> Result<Vec<Match>, Problem> {
    let owner = format!("match {module}");
    let unsupported = |opt: &Opt| Problem::Unsupported { owner: owner.clone(), option: opt.name.clone() };
    match module {
        "comment" => parse_comment(opts, unsupported),
        "tcp" | "udp" | "sctp" => parse_l4(module, opts, unsupported),
        "multiport" => opts.iter().map(|opt| parse_multiport(opt, unsupported)).collect(),
        "addrtype" => opts.iter().map(|opt| parse_addrtype(opt, unsupported)).collect(),
        "conntrack" | "state" => opts.iter().map(|opt| parse_ctstate(module, opt, unsupported)).collect(),
        "mark" => opts.iter().map(|opt| parse_mark(opt, unsupported)).collect(),
        "statistic" => parse_statistic(opts, unsupported).map(|m| vec![m]),
        "recent" => parse_recent(opts, unsupported).map(|m| vec![m]),
        "nfacct" => parse_nfacct(opts, unsupported),
        "physdev" => opts
            .iter()
            .map(|opt| match opt.name.as_str() {
                "--physdev-is-in" | "--physdev-is-out" | "--physdev-is-bridged" => {
                    Ok(Match::Physdev { option: opt.name.clone(), negated: opt.negated })
                }
                _ => Err(unsupported(opt)),
            })
            .collect(),
        "set" => opts.iter().map(|opt| parse_set(opt, unsupported)).collect(),
        other => Err(Problem::UnknownMatch(other.to_string())),
    }
}

fn parse_comment(opts: &[Opt], unsupported: impl Fn(&Opt) -> Problem) -> Result<Vec<Match>, Problem> {
    opts.iter()
        .map(|opt| match opt.name.as_str() {
            "--comment" => {
                opt.positive()?;
                Ok(Match::Comment(opt.value()?.to_string()))
            }
            _ => Err(unsupported(opt)),
        })
        .collect()
}

fn parse_l4(module: &str, opts: &[Opt], unsupported: impl Fn(&Opt) -> Problem) -> Result<Vec<Match>, Problem> {
    let protocol = match module {
        "tcp" => Protocol::Tcp,
        "udp" => Protocol::Udp,
        _ => Protocol::Sctp,
    };
    let mut matches = vec![Match::L4(protocol)];
    for opt in opts {
        let side = match opt.name.as_str() {
            "--dport" | "--destination-port" => Side::Dst,
            "--sport" | "--source-port" => Side::Src,
            "--syn" if protocol == Protocol::Tcp => {
                opt.flag()?;
                matches.push(Match::Syn { negated: opt.negated });
                continue;
            }
            _ => return Err(unsupported(opt)),
        };
        let (first, last) = parse_port_range(&opt.name, opt.value()?)?;
        matches.push(Match::Port { protocol, side, first, last, negated: opt.negated });
    }
    Ok(matches)
}

fn parse_port_range(option: &str, text: &str) -> Result<(u16, u16), Problem> {
    let port = |s: &str, default: u16| -> Result<u16, Problem> {
        if s.is_empty() {
            return Ok(default);
        }
        s.parse().map_err(|_| Problem::bad(option, format!("`{s}` is not a port")))
    };
    match text.split_once(':') {
        Some((a, b)) => Ok((port(a, 0)?, port(b, u16::MAX)?)),
        None => {
            let p = port(text, 0)?;
            Ok((p, p))
        }
    }
}

fn parse_multiport(opt: &Opt, unsupported: impl Fn(&Opt) -> Problem) -> Result<Match, Problem> {
    let side = match opt.name.as_str() {
        "--dports" | "--destination-ports" => Some(Side::Dst),
        "--sports" | "--source-ports" => Some(Side::Src),
        "--ports" => None,
        _ => return Err(unsupported(opt)),
    };
    let ranges = opt.value()?.split(',').map(|r| parse_port_range(&opt.name, r)).collect::<Result<_, _>>()?;
    Ok(Match::Multiport { side, ranges, negated: opt.negated })
}

fn parse_addrtype(opt: &Opt, unsupported: impl Fn(&Opt) -> Problem) -> Result<Match, Problem> {
    let side = match opt.name.as_str() {
        "--src-type" => Side::Src,
        "--dst-type" => Side::Dst,
        _ => return Err(unsupported(opt)),
    };
    let types = opt
        .value()?
        .split(',')
        .map(|t| match t {
            "LOCAL" => Ok(AddrType::Local),
            "UNICAST" => Ok(AddrType::Unicast),
            "BROADCAST" => Ok(AddrType::Broadcast),
            "MULTICAST" => Ok(AddrType::Multicast),
            other => Err(Problem::bad(&opt.name, format!("address type {other} is not modelled"))),
        })
        .collect::<Result<_, _>>()?;
    Ok(Match::AddrType { side, types, negated: opt.negated })
}

fn parse_ctstate(module: &str, opt: &Opt, unsupported: impl Fn(&Opt) -> Problem) -> Result<Match, Problem> {
    let expected = if module == "state" { "--state" } else { "--ctstate" };
    if opt.name != expected {
        return Err(unsupported(opt));
    }
    let states = opt
        .value()?
        .split(',')
        .map(|s| match s {
            "NEW" => Ok(CtState::New),
            "ESTABLISHED" => Ok(CtState::Established),
            "RELATED" => Ok(CtState::Related),
            "INVALID" => Ok(CtState::Invalid),
            "UNTRACKED" => Ok(CtState::Untracked),
            "SNAT" => Ok(CtState::Snat),
            "DNAT" => Ok(CtState::Dnat),
            other => Err(Problem::bad(&opt.name, format!("unknown state {other}"))),
        })
        .collect::<Result<_, _>>()?;
    Ok(Match::CtState { states, negated: opt.negated })
}

/// Parses `value[/mask]` (hex `0x...` or decimal); the mask defaults to
/// all ones.
pub(crate) fn parse_value_mask(option: &str, text: &str) -> Result<(u32, u32), Problem> {
    match text.split_once('/') {
        Some((value, mask)) => Ok((parse_u32(option, value)?, parse_u32(option, mask)?)),
        None => Ok((parse_u32(option, text)?, u32::MAX)),
    }
}

pub(crate) fn parse_u32(option: &str, text: &str) -> Result<u32, Problem> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| Problem::bad(option, format!("`{text}` is not a 32-bit number")))
}

fn parse_mark(opt: &Opt, unsupported: impl Fn(&Opt) -> Problem) -> Result<Match, Problem> {
    if opt.name != "--mark" {
        return Err(unsupported(opt));
    }
    let (value, mask) = parse_value_mask(&opt.name, opt.value()?)?;
    Ok(Match::Mark { value, mask, negated: opt.negated })
}

fn parse_statistic(opts: &[Opt], unsupported: impl Fn(&Opt) -> Problem) -> Result<Match, Problem> {
    let (mut mode, mut probability, mut every, mut negated) = (None, None, None, false);
    for opt in opts {
        match opt.name.as_str() {
            "--mode" => mode = Some(opt.value()?.to_string()),
            "--probability" => {
                let text = opt.value()?;
                probability = Some(text.parse::<f64>().map_err(|_| Problem::bad(&opt.name, format!("`{text}` is not a number")))?);
                negated |= opt.negated;
            }
            "--every" => {
                every = Some(parse_u32(&opt.name, opt.value()?)?);
                negated |= opt.negated;
            }
            "--packet" => {
                parse_u32(&opt.name, opt.value()?)?;
            }
            _ => return Err(unsupported(opt)),
        }
    }
    let mode = match (mode.as_deref(), probability, every) {
        (Some("random"), Some(p), None) => Statistic::Random(p),
        (Some("nth"), None, Some(n)) => Statistic::Nth(n),
        _ => return Err(Problem::bad("--mode", "need `random --probability p` or `nth --every n`")),
    };
    Ok(Match::Statistic { mode, negated })
}

fn parse_recent(opts: &[Opt], unsupported: impl Fn(&Opt) -> Problem) -> Result<Match, Problem> {
    let (mut action, mut name, mut negated) = (None, "DEFAULT".to_string(), false);
    for opt in opts {
        let this = match opt.name.as_str() {
            "--set" => RecentAction::Set,
            "--rcheck" => RecentAction::Check,
            "--update" => RecentAction::Update,
            "--remove" => RecentAction::Remove,
            "--name" => {
                name = opt.value()?.to_string();
                continue;
            }
            "--seconds" | "--hitcount" | "--mask" => {
                opt.value()?;
                continue;
            }
            "--reap" | "--rttl" | "--rsource" | "--rdest" => {
                opt.flag()?;
                continue;
            }
            _ => return Err(unsupported(opt)),
        };
        opt.flag()?;
        if action.replace(this).is_some() {
            return Err(Problem::bad(&opt.name, "more than one of --set/--rcheck/--update/--remove"));
        }
        negated = opt.negated;
    }
    let action = action.ok_or_else(|| Problem::bad("--name", "needs one of --set/--rcheck/--update/--remove"))?;
    Ok(Match::Recent { action, name, negated })
}

fn parse_nfacct(opts: &[Opt], unsupported: impl Fn(&Opt) -> Problem) -> Result<Vec<Match>, Problem> {
    opts.iter()
        .map(|opt| match opt.name.as_str() {
            "--nfacct-name" => Ok(Match::Nfacct(opt.value()?.to_string())),
            _ => Err(unsupported(opt)),
        })
        .collect()
}

fn parse_set(opt: &Opt, unsupported: impl Fn(&Opt) -> Problem) -> Result<Match, Problem> {
    if opt.name != "--match-set" {
        return Err(unsupported(opt));
    }
    let [name, flags] = opt.values.as_slice() else {
        return Err(Problem::bad(&opt.name, "expected NAME FLAGS"));
    };
    let flags = flags
        .split(',')
        .map(|f| match f {
            "src" => Ok(Side::Src),
            "dst" => Ok(Side::Dst),
            other => Err(Problem::bad(&opt.name, format!("flag `{other}` is neither src nor dst"))),
        })
        .collect::<Result<_, _>>()?;
    Ok(Match::Set { name: name.clone(), flags, negated: opt.negated })
}

/// The rule a match is evaluated for, for error messages.
pub(crate) struct RuleSite<'a> {
    pub line: usize,
    pub text: &'a str,
}

impl Match {
    /// Does the match hold for `flight`?
    pub(crate) fn eval(&self, flight: &Flight, ctx: &TraceContext, site: &RuleSite<'_>) -> Result<Tri, TraceError> {
        Ok(match self {
            Match::Source { net, negated } => Tri::of(net.contains(&flight.source) != *negated),
            Match::Destination { net, negated } => Tri::of(net.contains(&flight.destination) != *negated),
            Match::Protocol { spec, negated } => Tri::of(spec.matches(flight.protocol) != *negated),
            Match::InInterface { name, negated } => interface(name, *negated, flight.input_interface(), "-i"),
            Match::OutInterface { name, negated } => interface(name, *negated, flight.output_interface(ctx), "-o"),
            Match::L4(protocol) => Tri::of(flight.protocol == *protocol),
            Match::Port { protocol, side, first, last, negated } => {
                let port = port_of(flight, *side);
                Tri::of(flight.protocol == *protocol && ((*first..=*last).contains(&port) != *negated))
            }
            Match::Syn { negated } => Tri::of(flight.protocol == Protocol::Tcp && !*negated),
            Match::Multiport { side, ranges, negated } => {
                let hit = |port: u16| ranges.iter().any(|(a, b)| (*a..=*b).contains(&port));
                let any = match side {
                    Some(side) => hit(port_of(flight, *side)),
                    None => hit(flight.source_port) || hit(flight.destination_port),
                };
                Tri::of(any != *negated)
            }
            Match::Comment(_) | Match::Nfacct(_) => Tri::Yes,
            Match::Physdev { negated, .. } => Tri::of(*negated),
            Match::AddrType { side, types, negated } => {
                let ip = if *side == Side::Src { flight.source } else { flight.destination };
                Tri::of(types.contains(&address_type(ctx, ip)) != *negated)
            }
            Match::CtState { states, negated } => Tri::of(states.iter().any(|s| has_state(flight, *s)) != *negated),
            Match::Mark { value, mask, negated } => Tri::of((flight.mark & mask == *value) != *negated),
            Match::Statistic { mode, negated } => statistic(*mode, *negated),
            Match::Recent { action: RecentAction::Set, negated, .. } => Tri::of(!*negated),
            Match::Recent { name, negated, .. } => Tri::branch(*negated, format!("recent {name} hit (affinity)")),
            Match::Set { name, flags, negated } => set(flight, ctx, site, name, flags, *negated)?,
        })
    }
}

impl Match {
    /// The chance a match that can go either way holds for a new
    /// connection: its probability for `statistic`, `None` for a match
    /// that is not random (an unknown interface, an affinity check).
    pub fn chance(&self) -> Option<f64> {
        let p = match self {
            Match::Statistic { mode: Statistic::Random(p), .. } => p.clamp(0.0, 1.0),
            Match::Statistic { mode: Statistic::Nth(n), .. } => 1.0 / f64::from((*n).max(1)),
            _ => return None,
        };
        match self {
            Match::Statistic { negated: true, .. } => Some(1.0 - p),
            _ => Some(p),
        }
    }

    /// Whether this is a session-affinity check (`-m recent --rcheck`):
    /// it holds only for a client seen before.
    pub fn is_affinity_check(&self) -> bool {
        matches!(self, Match::Recent { action, negated: false, .. } if *action != RecentAction::Set)
    }
}

fn port_of(flight: &Flight, side: Side) -> u16 {
    match side {
        Side::Src => flight.source_port,
        Side::Dst => flight.destination_port,
    }
}

fn interface(pattern: &str, negated: bool, actual: Iface, option: &str) -> Tri {
    let matches = |name: &str| match pattern.strip_suffix('+') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    };
    match actual {
        Iface::Absent => Tri::of(matches("") != negated),
        Iface::Known(name) => Tri::of(matches(&name) != negated),
        Iface::Unknown => Tri::branch(negated, format!("{option} {pattern} (interface unknown)")),
    }
}

fn address_type(ctx: &TraceContext, ip: IpAddr) -> AddrType {
    if ctx.is_local(ip) {
        AddrType::Local
    } else if ip.is_multicast() {
        AddrType::Multicast
    } else if matches!(ip, IpAddr::V4(v4) if v4.is_broadcast()) {
        AddrType::Broadcast
    } else {
        AddrType::Unicast
    }
}

/// A traced packet opens a NEW connection; DNAT/SNAT once they happened.
fn has_state(flight: &Flight, state: CtState) -> bool {
    match state {
        CtState::New => true,
        CtState::Dnat => flight.dnat,
        CtState::Snat => flight.snat,
        CtState::Established | CtState::Related | CtState::Invalid | CtState::Untracked => false,
    }
}

fn statistic(mode: Statistic, negated: bool) -> Tri {
    match mode {
        Statistic::Random(p) if p >= 1.0 => Tri::of(!negated),
        Statistic::Random(p) if p <= 0.0 => Tri::of(negated),
        Statistic::Random(p) => Tri::branch(negated, format!("statistic random {p}")),
        Statistic::Nth(n) if n <= 1 => Tri::of(!negated),
        Statistic::Nth(n) => Tri::branch(negated, format!("statistic nth every {n}")),
    }
}

fn set(flight: &Flight, ctx: &TraceContext, site: &RuleSite<'_>, name: &str, flags: &[Side], negated: bool) -> Result<Tri, TraceError> {
    let set = ctx.ipsets.get(name).ok_or_else(|| TraceError::UnknownIpset {
        line: site.line,
        rule: site.text.to_string(),
        set: name.to_string(),
    })?;
    let dims = set.kind.dims();
    if dims.len() != flags.len() {
        let flags: Vec<&str> = flags.iter().map(|f| if *f == Side::Src { "src" } else { "dst" }).collect();
        return Err(TraceError::IpsetFlags {
            line: site.line,
            rule: site.text.to_string(),
            set: name.to_string(),
            kind: set.kind.to_string(),
            flags: flags.join(","),
        });
    }
    let keys: Vec<Key> = dims
        .iter()
        .zip(flags)
        .map(|(dim, side)| match (dim, side) {
            (Dim::Addr, Side::Src) => Key::Addr(flight.source),
            (Dim::Addr, Side::Dst) => Key::Addr(flight.destination),
            (Dim::Port, side) => Key::Port(flight.protocol, port_of(flight, *side)),
        })
        .collect();
    Ok(Tri::of(set.contains(&keys) != negated))
}

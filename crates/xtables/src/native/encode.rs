//! One rule as an x_tables entry (`struct ipt_entry` / `ip6t_entry` with
//! its `xt_entry_match` and `xt_entry_target` records), laid out byte for
//! byte as `iptables-legacy-restore` 1.8.9 lays it out, for exactly the
//! matches and targets the modes render (see [`Unsupported`] for the
//! rest). A jump's verdict (an offset in the table) is only known when the
//! table is laid out: the entry records which chain it enters
//! ([`Entry::jump`]) and [`super::table`] patches it.

use super::layout::{Family, align, put_name, put_u16, put_u32};
use super::parse::{Token, tokens};
use std::net::SocketAddr;
use crate::rules::{RejectWith, Target};
use std::net::IpAddr;
use std::sync::Arc;

/// What the native writer cannot encode (the rule then goes through
/// `iptables-restore`): the option or target, spelled as in the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the native x_tables writer cannot encode {what:?} in rule {rule:?}")]
pub struct Unsupported {
    /// The option, module or target it cannot encode.
    pub what: String,
    /// The whole rule line.
    pub rule: String,
}

/// One encoded entry: its bytes (counters zero), and the chain its target
/// enters when it is a jump or goto (its verdict is patched at layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry, `next_offset` bytes.
    pub bytes: Vec<u8>,
    /// The chain a jump or goto enters.
    pub jump: Option<Arc<str>>,
}

/// Standard verdicts (`-NF_x - 1`).
pub(crate) const VERDICT_DROP: i32 = -1;
pub(crate) const VERDICT_ACCEPT: i32 = -2;
pub(crate) const VERDICT_RETURN: i32 = -5;

/// Encodes the rule `line` (as [`crate::Rule::line`] spells it; `matches`
/// is its match part) with `target`.
pub fn encode_rule(family: Family, line: &str, matches: &str, target: Target<'_>) -> Result<Entry, Unsupported> {
    let fail = |what: String| Unsupported { what, rule: line.to_string() };
    let toks = tokens(matches).map_err(fail)?;
    let mut head = vec![0u8; family.entry_len()];
    let mut records = Vec::with_capacity(512);
    encode_match_tokens(family, &toks, &mut head, &mut records).map_err(fail)?;
    finish(family, target, head, records).map_err(fail)
}

/// Encodes a rule spec as `iptables-restore` reads it after `-A CHAIN`:
/// matches, then `-j TARGET [options]` or `-g CHAIN` (or no target).
pub fn encode_spec(family: Family, spec: &str) -> Result<Entry, Unsupported> {
    let fail = |what: String| Unsupported { what, rule: spec.to_string() };
    let toks = tokens(spec).map_err(fail)?;
    let at = toks.iter().position(|t| matches!(t.text(), "-j" | "-g") && *t != Token::Bang);
    let (matches, target) = toks.split_at(at.unwrap_or(toks.len()));
    let target = parse_target(target).map_err(fail)?;
    let mut head = vec![0u8; family.entry_len()];
    let mut records = Vec::with_capacity(512);
    encode_match_tokens(family, matches, &mut head, &mut records).map_err(fail)?;
    finish(family, target, head, records).map_err(fail)
}

/// The typed target of `toks` (`-j NAME options` / `-g CHAIN`, or none).
fn parse_target(toks: &[Token]) -> Result<Target<'_>, String> {
    let words: Vec<&str> = toks.iter().map(Token::text).collect();
    Ok(match words.as_slice() {
        [] => Target::None,
        ["-g", chain] => Target::Goto(chain),
        ["-j", "ACCEPT"] => Target::Accept,
        ["-j", "DROP"] => Target::Drop,
        ["-j", "RETURN"] => Target::Return,
        ["-j", "REJECT"] | ["-j", "REJECT", "--reject-with", "icmp-port-unreachable"] => Target::Reject(RejectWith::IcmpPortUnreachable),
        ["-j", "REJECT", "--reject-with", "icmp6-port-unreachable"] => Target::Reject(RejectWith::Icmp6PortUnreachable),
        ["-j", "DNAT", "--to-destination", to] => Target::Dnat(to.parse::<SocketAddr>().map_err(|_| format!("-j DNAT --to-destination {to}"))?),
        ["-j", "MASQUERADE"] => Target::Masquerade { random_fully: false },
        ["-j", "MASQUERADE", "--random-fully"] => Target::Masquerade { random_fully: true },
        ["-j", "MARK", "--set-xmark", spec] => {
            let (value, mask) = value_mask(spec)?;
            Target::SetXmark { value, mask }
        }
        // Any other name is a chain: a target we do not know fails at
        // layout, when no chain of that name exists.
        ["-j", chain] => Target::Jump(chain),
        _ => return Err(words.join(" ")),
    })
}

/// Appends the target and sets the entry's offsets.
fn finish(family: Family, target: Target<'_>, mut head: Vec<u8>, mut records: Vec<u8>) -> Result<Entry, String> {
    let target_offset = head.len() + records.len();
    let jump = encode_target(family, target, &mut head, &mut records)?;
    head.extend_from_slice(&records);
    let next = head.len();
    family.set_offsets(&mut head, target_offset, next).map_err(|()| "an entry over 64 KiB".to_string())?;
    Ok(Entry { bytes: head, jump })
}

/// The entry of a standard target alone (a chain's policy or `RETURN`
/// tail), verdict `verdict`.
pub fn standard_entry(family: Family, verdict: i32) -> Vec<u8> {
    let mut head = vec![0u8; family.entry_len()];
    let mut records = Vec::new();
    push_standard(&mut records, verdict);
    let target_offset = head.len();
    head.extend_from_slice(&records);
    let next = head.len();
    let _ = family.set_offsets(&mut head, target_offset, next);
    head
}

/// The `ERROR` entry heading a user chain (`name`) or ending the table
/// (`ERROR`).
pub fn error_entry(family: Family, name: &str) -> Vec<u8> {
    let mut head = vec![0u8; family.entry_len()];
    let mut record = record_header(64, "ERROR", 0);
    put_name(&mut record[32..62], name);
    let target_offset = head.len();
    head.extend_from_slice(&record);
    let next = head.len();
    let _ = family.set_offsets(&mut head, target_offset, next);
    head
}

/// A match or target record: size, name, revision, then `size - 32`
/// zero bytes of data.
fn record_header(size: usize, name: &str, revision: u8) -> Vec<u8> {
    let mut record = vec![0u8; size];
    put_u16(&mut record, 0, size as u16);
    put_name(&mut record[2..31], name);
    record[31] = revision;
    record
}

/// A record with `data` (padded to 8 bytes).
fn record(name: &str, revision: u8, data: &[u8]) -> Vec<u8> {
    let mut record = record_header(32 + align(data.len()), name, revision);
    record[32..32 + data.len()].copy_from_slice(data);
    record
}

fn push_standard(records: &mut Vec<u8>, verdict: i32) {
    let mut target = record_header(40, "", 0);
    target[32..36].copy_from_slice(&verdict.to_ne_bytes());
    records.extend_from_slice(&target);
}

/// The matches: the address part goes into the entry's head, each `-m`
/// module appends a record.
fn encode_match_tokens(family: Family, toks: &[Token], head: &mut [u8], records: &mut Vec<u8>) -> Result<(), String> {
    let mut i = 0;
    while i < toks.len() {
        let (negated, option, at) = option_at(toks, i)?;
        let value = toks.get(at + 1).map(Token::text).ok_or_else(|| format!("{option} without a value"))?;
        i = at + 2;
        match option {
            "-s" | "-d" => family.set_address(head, option == "-d", value, negated)?,
            "-i" | "-o" => family.set_iface(head, option == "-o", value, negated)?,
            "-p" => family.set_proto(head, value, negated)?,
            "-m" if !negated => {
                let end = module_end(toks, i);
                records.extend_from_slice(&encode_module(family, value, &toks[i..end])?);
                i = end;
            }
            other => return Err(if negated { format!("! {other}") } else { other.to_string() }),
        }
    }
    Ok(())
}

/// Where the options of a module starting at `from` end: at the next
/// `-m` (or `! -x` / `-x` entry option, which never follow modules in
/// iptables-save's order, but end them all the same).
fn module_end(toks: &[Token], from: usize) -> usize {
    let mut i = from;
    while i < toks.len() {
        let next = if toks[i] == Token::Bang { toks.get(i + 1) } else { Some(&toks[i]) };
        if next.is_some_and(|t| matches!(t.text(), "-m" | "-s" | "-d" | "-i" | "-o" | "-p")) {
            return i;
        }
        i += 1;
    }
    i
}

/// The option at `i` (after a `!`, if any): negated, its name, its index.
fn option_at(toks: &[Token], i: usize) -> Result<(bool, &str, usize), String> {
    let negated = toks.get(i) == Some(&Token::Bang);
    let at = i + usize::from(negated);
    let option = toks.get(at).map(Token::text).ok_or("a trailing !")?;
    Ok((negated, option, at))
}

/// One option of a module: negated, its name, its value.
type Opt<'a> = (bool, &'a str, Option<&'a str>);

/// Options of one module.
fn options(toks: &[Token]) -> Result<Vec<Opt<'_>>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (negated, option, at) = option_at(toks, i)?;
        let value = toks.get(at + 1).filter(|t| !t.text().starts_with("--") && **t != Token::Bang).map(Token::text);
        i = at + 1 + usize::from(value.is_some());
        out.push((negated, option, value));
    }
    Ok(out)
}

fn encode_module(family: Family, name: &str, toks: &[Token]) -> Result<Vec<u8>, String> {
    let opts = options(toks)?;
    let unknown = |(neg, opt, _): &Opt| format!("-m {name} {}{opt}", if *neg { "! " } else { "" });
    let need = |v: Option<&str>, opt: &str| v.map(str::to_string).ok_or_else(|| format!("-m {name} {opt} without a value"));
    // a module whose options are not the one shape it takes
    let misshapen = || opts.first().map_or(format!("-m {name}"), unknown);
    match name {
        "comment" => {
            let [(false, "--comment", Some(text))] = opts.as_slice() else { return Err(misshapen()) };
            if text.len() > 255 {
                return Err("-m comment longer than 255 bytes".into());
            }
            let mut data = [0u8; 256];
            data[..text.len()].copy_from_slice(text.as_bytes());
            Ok(record("comment", 0, &data))
        }
        "tcp" | "udp" => {
            // spts [0, 65535], dpts, then tcp's option/flags or udp's invflags.
            let mut data = [0u8; 12];
            put_u16(&mut data, 2, u16::MAX);
            put_u16(&mut data, 6, u16::MAX);
            let invflags_at = if name == "tcp" { 11 } else { 8 };
            for opt in &opts {
                let (slot, inv) = match opt.1 {
                    "--sport" => (0, 0x01),
                    "--dport" => (4, 0x02),
                    _ => return Err(unknown(opt)),
                };
                let (low, high) = port_range(&need(opt.2, opt.1)?)?;
                put_u16(&mut data, slot, low);
                put_u16(&mut data, slot + 2, high);
                if opt.0 {
                    data[invflags_at] |= inv;
                }
            }
            Ok(record(name, 0, &data[..if name == "tcp" { 12 } else { 10 }]))
        }
        "mark" => {
            let [(neg, "--mark", Some(spec))] = opts.as_slice() else { return Err(misshapen()) };
            let (value, mask) = value_mask(spec)?;
            let mut data = [0u8; 9];
            put_u32(&mut data, 0, value);
            put_u32(&mut data, 4, mask);
            data[8] = u8::from(*neg);
            Ok(record("mark", 1, &data))
        }
        "conntrack" => {
            let [(neg, "--ctstate", Some(states))] = opts.as_slice() else { return Err(misshapen()) };
            let mut data = [0u8; 162];
            put_u16(&mut data, 146, 1); // match_flags: XT_CONNTRACK_STATE
            put_u16(&mut data, 148, u16::from(*neg));
            put_u16(&mut data, 150, ct_states(states)?);
            Ok(record("conntrack", 3, &data))
        }
        "addrtype" => {
            let mut data = [0u8; 8];
            for opt in &opts {
                let (slot, inv) = match opt.1 {
                    "--src-type" => (0, 0x1),
                    "--dst-type" => (2, 0x2),
                    "--limit-iface-in" => {
                        data[4] |= 0x4;
                        continue;
                    }
                    _ => return Err(unknown(opt)),
                };
                put_u16(&mut data, slot, addr_types(&need(opt.2, opt.1)?)?);
                if opt.0 {
                    data[4] |= inv;
                }
            }
            Ok(record("addrtype", 1, &data))
        }
        "statistic" => {
            let [(false, "--mode", Some("random")), (false, "--probability", Some(p))] = opts.as_slice() else {
                return Err(opts.iter().find(|o| o.1 != "--mode").map_or(format!("-m {name}"), unknown));
            };
            let p: f64 = p.parse().map_err(|_| format!("-m statistic --probability {p}"))?;
            let probability = (p * f64::from(0x8000_0000u32)).round() as u32;
            let mut data = [0u8; 24];
            put_u32(&mut data, 4, probability);
            // As the tool leaves it: the union's last word holds it too.
            put_u32(&mut data, 12, probability);
            Ok(record("statistic", 0, &data))
        }
        "recent" => encode_recent(family, &opts),
        "nfacct" => {
            let [(false, "--nfacct-name", Some(acct))] = opts.as_slice() else { return Err(misshapen()) };
            if acct.len() >= 32 {
                return Err(format!("-m nfacct --nfacct-name {acct}"));
            }
            let mut data = [0u8; 40];
            data[..acct.len()].copy_from_slice(acct.as_bytes());
            Ok(record("nfacct", 1, &data))
        }
        other => Err(format!("-m {other}")),
    }
}

/// `xt_recent_mtinfo_v1`: seconds, hit_count, check_set, invert, name[200],
/// side, then the mask (all ones unless `--mask`).
fn encode_recent(family: Family, opts: &[Opt]) -> Result<Vec<u8>, String> {
    let mut data = [0u8; 228];
    let mut name = "DEFAULT".to_string();
    let mut mask: Option<IpAddr> = None;
    for &(neg, opt, value) in opts {
        let need = || value.ok_or_else(|| format!("-m recent {opt} without a value"));
        match opt {
            "--set" => data[8] |= 0x02,
            "--rcheck" => data[8] |= 0x01,
            "--update" => data[8] |= 0x04,
            "--remove" => data[8] |= 0x08,
            "--reap" => data[8] |= 0x20,
            "--rsource" => data[210] = 0,
            "--rdest" => data[210] = 1,
            "--seconds" => put_u32(&mut data, 0, need()?.parse().map_err(|_| "-m recent --seconds".to_string())?),
            "--hitcount" => put_u32(&mut data, 4, need()?.parse().map_err(|_| "-m recent --hitcount".to_string())?),
            "--name" => name = need()?.to_string(),
            "--mask" => mask = Some(need()?.parse().map_err(|_| "-m recent --mask".to_string())?),
            _ => return Err(format!("-m recent {opt}")),
        }
        if neg && matches!(opt, "--set" | "--rcheck" | "--update" | "--remove") {
            data[9] = 1;
        } else if neg {
            return Err(format!("-m recent ! {opt}"));
        }
    }
    if name.len() >= 200 {
        return Err("-m recent --name longer than 199 bytes".into());
    }
    data[10..10 + name.len()].copy_from_slice(name.as_bytes());
    match mask {
        Some(IpAddr::V4(m)) if family == Family::V4 => data[212..216].copy_from_slice(&m.octets()),
        Some(IpAddr::V6(m)) if family == Family::V6 => data[212..228].copy_from_slice(&m.octets()),
        Some(_) => return Err("-m recent --mask of the other family".into()),
        None => data[212..228].fill(0xff),
    }
    Ok(record("recent", 1, &data))
}

fn port_range(spec: &str) -> Result<(u16, u16), String> {
    let parse = |p: &str| p.parse::<u16>().map_err(|_| format!("port {spec}"));
    match spec.split_once(':') {
        Some((low, high)) => Ok((parse(low)?, parse(high)?)),
        None => parse(spec).map(|p| (p, p)),
    }
}

fn value_mask(spec: &str) -> Result<(u32, u32), String> {
    let number = |s: &str| {
        let parsed = match s.strip_prefix("0x") {
            Some(hex) => u32::from_str_radix(hex, 16),
            None => s.parse(),
        };
        parsed.map_err(|_| format!("mark {spec}"))
    };
    match spec.split_once('/') {
        Some((value, mask)) => Ok((number(value)?, number(mask)?)),
        None => Ok((number(spec)?, u32::MAX)),
    }
}

fn ct_states(list: &str) -> Result<u16, String> {
    list.split(',')
        .map(|state| match state {
            "INVALID" => Ok(1 << 0),
            "ESTABLISHED" => Ok(1 << 1),
            "RELATED" => Ok(1 << 2),
            "NEW" => Ok(1 << 3),
            "SNAT" => Ok(1 << 6),
            "DNAT" => Ok(1 << 7),
            "UNTRACKED" => Ok(1 << 8),
            other => Err(format!("--ctstate {other}")),
        })
        .try_fold(0u16, |acc, bit| bit.map(|b| acc | b))
}

fn addr_types(list: &str) -> Result<u16, String> {
    const NAMES: [&str; 12] =
        ["UNSPEC", "UNICAST", "LOCAL", "BROADCAST", "ANYCAST", "MULTICAST", "BLACKHOLE", "UNREACHABLE", "PROHIBIT", "THROW", "NAT", "XRESOLVE"];
    list.split(',')
        .map(|t| NAMES.iter().position(|n| *n == t).map(|bit| 1u16 << bit).ok_or_else(|| format!("address type {t}")))
        .try_fold(0u16, |acc, bit| bit.map(|b| acc | b))
}

/// Appends the target record; returns the chain of a jump or goto.
fn encode_target(family: Family, target: Target<'_>, head: &mut [u8], records: &mut Vec<u8>) -> Result<Option<Arc<str>>, String> {
    let record_of = match target {
        Target::None => {
            // No target: a standard one falling through, patched like a jump
            // to the next entry is not needed: libiptc writes the next
            // entry's offset; the layout does the same (see `FALLTHROUGH`).
            push_standard(records, 0);
            return Ok(Some(super::table::fallthrough()));
        }
        Target::Jump(chain) | Target::Goto(chain) => {
            if matches!(target, Target::Goto(_)) {
                family.set_goto(head);
            }
            push_standard(records, 0);
            return Ok(Some(chain.into()));
        }
        Target::Accept => return push_verdict(records, VERDICT_ACCEPT),
        Target::Drop => return push_verdict(records, VERDICT_DROP),
        Target::Return => return push_verdict(records, VERDICT_RETURN),
        Target::Reject(with) => {
            let code: u32 = match (family, with) {
                (Family::V4, RejectWith::IcmpPortUnreachable) => 3,
                (Family::V6, RejectWith::Icmp6PortUnreachable) => 4,
                _ => return Err(format!("REJECT --reject-with {} in {family:?}", with.as_str())),
            };
            record("REJECT", 0, &code.to_ne_bytes())
        }
        Target::Dnat(to) => {
            // nf_nat_range2: flags, min_addr, max_addr, min/max/base proto.
            let mut data = [0u8; 42];
            put_u32(&mut data, 0, 0x3); // MAP_IPS | PROTO_SPECIFIED
            match (family, to.ip()) {
                (Family::V4, IpAddr::V4(ip)) => {
                    data[4..8].copy_from_slice(&ip.octets());
                    data[20..24].copy_from_slice(&ip.octets());
                }
                (Family::V6, IpAddr::V6(ip)) => {
                    data[4..20].copy_from_slice(&ip.octets());
                    data[20..36].copy_from_slice(&ip.octets());
                }
                _ => return Err(format!("DNAT to {to} in {family:?}")),
            }
            data[36..38].copy_from_slice(&to.port().to_be_bytes());
            data[38..40].copy_from_slice(&to.port().to_be_bytes());
            record("DNAT", 2, &data)
        }
        // Userspace mode's portals go to `iptables-restore` only.
        Target::Redirect(port) => return Err(format!("REDIRECT --to-ports {port}")),
        Target::Masquerade { random_fully } => {
            let flags: u32 = if random_fully { 0x10 } else { 0 };
            match family {
                // nf_nat_ipv4_multi_range_compat: rangesize 1, range[0].flags.
                Family::V4 => {
                    let mut data = [0u8; 20];
                    put_u32(&mut data, 0, 1);
                    put_u32(&mut data, 4, flags);
                    record("MASQUERADE", 0, &data)
                }
                // nf_nat_range: flags, min/max addr, min/max proto.
                Family::V6 => {
                    let mut data = [0u8; 40];
                    put_u32(&mut data, 0, flags);
                    record("MASQUERADE", 0, &data)
                }
            }
        }
        Target::SetXmark { value, mask } => {
            let mut data = [0u8; 8];
            put_u32(&mut data, 0, value);
            put_u32(&mut data, 4, mask);
            record("MARK", 2, &data)
        }
    };
    records.extend_from_slice(&record_of);
    Ok(None)
}

fn push_verdict(records: &mut Vec<u8>, verdict: i32) -> Result<Option<Arc<str>>, String> {
    push_standard(records, verdict);
    Ok(None)
}

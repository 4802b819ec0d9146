//! Targets: what a rule does when it matches.

use super::matches::{parse_u32, parse_value_mask};
use super::rule::{Opt, Problem};
use std::net::IpAddr;

/// `-j` (jump: come back on RETURN) or `-g` (goto: RETURN goes to the
/// caller's caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TargetKind {
    Jump,
    Goto,
}

/// How `-j MARK` changes the mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkOp {
    /// `--set-xmark v/m`: `mark = (mark & !m) ^ v`.
    Xor,
    /// `--set-mark v/m`: `mark = (mark & !m) | v`.
    Or,
}

/// What a rule does when it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// No `-j`: the rule only counts.
    None,
    /// `ACCEPT`: leave this table for this hook.
    Accept,
    /// `DROP`
    Drop,
    /// `REJECT` (any `--reject-with`).
    Reject,
    /// `RETURN`: back to the calling chain (or the policy).
    Return,
    /// `-j CHAIN`
    Jump(String),
    /// `-g CHAIN`
    Goto(String),
    /// `DNAT --to-destination ip[:port]` (nat table; ends the table).
    Dnat {
        /// New destination address.
        to: IpAddr,
        /// New destination port, if given.
        port: Option<u16>,
    },
    /// `SNAT --to-source ip[:port]` (nat table; ends the table).
    Snat {
        /// New source address.
        to: IpAddr,
    },
    /// `MASQUERADE` (nat table; ends the table).
    Masquerade,
    /// `MARK`
    Mark {
        /// Bits to set / flip.
        value: u32,
        /// Bits cleared first.
        mask: u32,
        /// Xor (`--set-xmark`) or or (`--set-mark`).
        op: MarkOp,
    },
}

impl Target {
    /// The new mark after this `MARK` target (`mark` unchanged for other
    /// targets).
    pub fn apply_mark(&self, mark: u32) -> u32 {
        match self {
            Target::Mark { value, mask, op: MarkOp::Xor } => (mark & !mask) ^ value,
            Target::Mark { value, mask, op: MarkOp::Or } => (mark & !mask) | value,
            _ => mark,
        }
    }

    /// Only valid in the nat table.
    pub(crate) fn is_nat(&self) -> bool {
        matches!(self, Target::Dnat { .. } | Target::Snat { .. } | Target::Masquerade)
    }

    /// The user chain this target enters, if any.
    pub(crate) fn chain(&self) -> Option<&str> {
        match self {
            Target::Jump(chain) | Target::Goto(chain) => Some(chain),
            _ => None,
        }
    }
}

/// Parses `-j NAME opts` / `-g NAME`; an unknown upper-case name is a jump
/// to a user chain (checked against the table later).
pub(crate) fn parse_target(kind: TargetKind, name: &str, opts: &[Opt]) -> Result<Target, Problem> {
    let owner = format!("target {name}");
    let unsupported = |opt: &Opt| Problem::Unsupported { owner: owner.clone(), option: opt.name.clone() };
    if kind == TargetKind::Goto {
        return match opts.first() {
            Some(opt) => Err(unsupported(opt)),
            None => Ok(Target::Goto(name.to_string())),
        };
    }
    match name {
        "ACCEPT" | "DROP" | "RETURN" => {
            if let Some(opt) = opts.first() {
                return Err(unsupported(opt));
            }
            Ok(match name {
                "ACCEPT" => Target::Accept,
                "DROP" => Target::Drop,
                _ => Target::Return,
            })
        }
        "REJECT" => {
            for opt in opts {
                match opt.name.as_str() {
                    "--reject-with" => {
                        opt.value()?;
                    }
                    _ => return Err(unsupported(opt)),
                }
            }
            Ok(Target::Reject)
        }
        "DNAT" => parse_dnat(opts, unsupported),
        "SNAT" => parse_snat(opts, unsupported),
        "MASQUERADE" => {
            for opt in opts {
                match opt.name.as_str() {
                    "--random" | "--random-fully" => opt.flag()?,
                    "--to-ports" => {
                        opt.value()?;
                    }
                    _ => return Err(unsupported(opt)),
                }
            }
            Ok(Target::Masquerade)
        }
        "MARK" => parse_mark(opts, unsupported),
        chain => match opts.first() {
            Some(opt) => Err(unsupported(opt)),
            None => Ok(Target::Jump(chain.to_string())),
        },
    }
}

fn parse_dnat(opts: &[Opt], unsupported: impl Fn(&Opt) -> Problem) -> Result<Target, Problem> {
    let mut to = None;
    for opt in opts {
        match opt.name.as_str() {
            "--to-destination" => to = Some(parse_address_port(&opt.name, opt.value()?)?),
            "--random" | "--persistent" => opt.flag()?,
            _ => return Err(unsupported(opt)),
        }
    }
    let (to, port) = to.ok_or_else(|| Problem::bad("--to-destination", "DNAT needs --to-destination"))?;
    Ok(Target::Dnat { to, port })
}

fn parse_snat(opts: &[Opt], unsupported: impl Fn(&Opt) -> Problem) -> Result<Target, Problem> {
    let mut to = None;
    for opt in opts {
        match opt.name.as_str() {
            "--to-source" => to = Some(parse_address_port(&opt.name, opt.value()?)?.0),
            "--random" | "--random-fully" | "--persistent" => opt.flag()?,
            _ => return Err(unsupported(opt)),
        }
    }
    let to = to.ok_or_else(|| Problem::bad("--to-source", "SNAT needs --to-source"))?;
    Ok(Target::Snat { to })
}

/// `ip`, `ip:port`, `[v6]`, `[v6]:port`; ranges are not modelled.
fn parse_address_port(option: &str, text: &str) -> Result<(IpAddr, Option<u16>), Problem> {
    let bad = || Problem::bad(option, format!("`{text}` is not ip[:port] (ranges are not modelled)"));
    let (ip, port) = if let Some(rest) = text.strip_prefix('[') {
        let (ip, after) = rest.split_once(']').ok_or_else(bad)?;
        (ip, after.strip_prefix(':'))
    } else if text.matches(':').count() == 1 {
        let (ip, port) = text.split_once(':').ok_or_else(bad)?;
        (ip, Some(port))
    } else {
        (text, None)
    };
    let ip = ip.parse::<IpAddr>().map_err(|_| bad())?;
    let port = port.map(|p| p.parse::<u16>().map_err(|_| bad())).transpose()?;
    Ok((ip, port))
}

fn parse_mark(opts: &[Opt], unsupported: impl Fn(&Opt) -> Problem) -> Result<Target, Problem> {
    let [opt] = opts else {
        return Err(Problem::bad("MARK", "needs exactly one of --set-xmark/--set-mark/--and-mark/--or-mark/--xor-mark"));
    };
    let text = opt.value()?;
    let (value, mask, op) = match opt.name.as_str() {
        "--set-xmark" => {
            let (value, mask) = parse_value_mask(&opt.name, text)?;
            (value, mask, MarkOp::Xor)
        }
        "--set-mark" => {
            let (value, mask) = parse_value_mask(&opt.name, text)?;
            (value, mask, MarkOp::Or)
        }
        "--and-mark" => (0, !parse_u32(&opt.name, text)?, MarkOp::Xor),
        "--or-mark" => {
            let bits = parse_u32(&opt.name, text)?;
            (bits, bits, MarkOp::Or)
        }
        "--xor-mark" => (parse_u32(&opt.name, text)?, 0, MarkOp::Xor),
        _ => return Err(unsupported(opt)),
    };
    Ok(Target::Mark { value, mask, op })
}

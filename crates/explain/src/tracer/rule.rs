//! Reads one rule's arguments (everything after `-A CHAIN`) into its
//! matches and target: base options (`-s -d -p -i -o`, with `!`), match
//! modules (`-m NAME --opt ...`) and the target (`-j` / `-g`).

use super::error::TraceError;
use super::matches::{self, Match, ProtoSpec};
use super::target::{self, Target, TargetKind};
use super::words::{Word, split_words};
use ipnet::IpNet;
use std::net::IpAddr;

/// What is wrong with a rule; turned into a [`TraceError`] naming the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    Syntax(String),
    UnknownMatch(String),
    Unsupported { owner: String, option: String },
    BadValue { option: String, reason: String },
}

impl Problem {
    /// A bad value of `option`.
    pub fn bad(option: &str, reason: impl Into<String>) -> Self {
        Problem::BadValue { option: option.to_string(), reason: reason.into() }
    }

    /// The error for this problem in `rule` (at line `line`).
    pub fn at(self, line: usize, rule: &str) -> TraceError {
        let rule = rule.to_string();
        match self {
            Problem::Syntax(reason) => TraceError::Syntax { line, text: rule, reason },
            Problem::UnknownMatch(module) => TraceError::UnknownMatch { line, rule, module },
            Problem::Unsupported { owner, option } => TraceError::UnsupportedOption { line, rule, owner, option },
            Problem::BadValue { option, reason } => TraceError::BadValue { line, rule, option, reason },
        }
    }
}

/// One `--option value...` of a match or target, with its `!`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opt {
    pub negated: bool,
    pub name: String,
    pub values: Vec<String>,
}

impl Opt {
    /// The single value of this option.
    pub fn value(&self) -> Result<&str, Problem> {
        match self.values.as_slice() {
            [value] => Ok(value),
            _ => Err(Problem::bad(&self.name, format!("expected one value, got {}", self.values.len()))),
        }
    }

    /// Checks the option is a flag without value.
    pub fn flag(&self) -> Result<(), Problem> {
        if self.values.is_empty() {
            Ok(())
        } else {
            Err(Problem::bad(&self.name, "takes no value"))
        }
    }

    /// Checks the option is not negated.
    pub fn positive(&self) -> Result<(), Problem> {
        if self.negated {
            Err(Problem::bad(&self.name, "cannot be negated"))
        } else {
            Ok(())
        }
    }
}

/// Where `--options` currently go.
enum Owner {
    Base,
    Module(usize),
    Target,
}

/// The rule's words grouped by owner.
#[derive(Default)]
struct Groups {
    base: Vec<Match>,
    protocol: Option<ProtoSpec>,
    modules: Vec<(String, Vec<Opt>)>,
    target: Option<(TargetKind, String, Vec<Opt>)>,
}

/// Parses a rule spec into matches and target.
pub(crate) fn parse_spec(spec: &str) -> Result<(Vec<Match>, Target), Problem> {
    let words = split_words(spec).map_err(Problem::Syntax)?;
    let groups = group_words(&words)?;
    let mut matches = groups.base;
    for (module, opts) in &groups.modules {
        matches.extend(matches::parse_module(module, opts)?);
    }
    let target = match groups.target {
        Some((kind, name, opts)) => target::parse_target(kind, &name, &opts)?,
        None => Target::None,
    };
    Ok((matches, target))
}

fn group_words(words: &[Word]) -> Result<Groups, Problem> {
    let mut groups = Groups::default();
    let mut owner = Owner::Base;
    let mut negated = false;
    let mut i = 0;
    while let Some(word) = words.get(i) {
        if word.quoted {
            return Err(Problem::Syntax(format!("unexpected value `{}`", word.text)));
        }
        let text = word.text.as_str();
        if text == "!" {
            if negated {
                return Err(Problem::Syntax("`!` twice".to_string()));
            }
            negated = true;
            i += 1;
            continue;
        }
        if let Some(value) = is_base_option(text).then(|| words.get(i + 1)).flatten() {
            groups.add_base(text, &value.text, negated)?;
            owner = Owner::Base;
            i += 2;
        } else if is_base_option(text) {
            return Err(Problem::bad(text, "missing value"));
        } else if matches!(text, "-m" | "--match" | "-j" | "--jump" | "-g" | "--goto") {
            let name = words.get(i + 1).ok_or_else(|| Problem::bad(text, "missing name"))?.text.clone();
            if negated {
                return Err(Problem::Syntax(format!("`!` before {text}")));
            }
            owner = groups.open(text, name)?;
            i += 2;
        } else if text.starts_with("--") {
            let mut values = Vec::new();
            let mut j = i + 1;
            while let Some(next) = words.get(j).filter(|w| w.quoted || !is_option_like(&w.text)) {
                values.push(next.text.clone());
                j += 1;
            }
            groups.add_opt(&owner, Opt { negated, name: text.to_string(), values })?;
            i = j;
        } else {
            return Err(Problem::Syntax(format!("unexpected word `{text}`")));
        }
        negated = false;
    }
    if negated {
        return Err(Problem::Syntax("dangling `!`".to_string()));
    }
    Ok(groups)
}

fn is_base_option(text: &str) -> bool {
    matches!(
        text,
        "-s" | "--source"
            | "--src"
            | "-d"
            | "--destination"
            | "--dst"
            | "-p"
            | "--protocol"
            | "-i"
            | "--in-interface"
            | "-o"
            | "--out-interface"
    )
}

fn is_option_like(text: &str) -> bool {
    text == "!" || (text.len() > 1 && text.starts_with('-') && !text[1..].starts_with(|c: char| c.is_ascii_digit()))
}

impl Groups {
    fn add_base(&mut self, option: &str, value: &str, negated: bool) -> Result<(), Problem> {
        let m = match option {
            "-s" | "--source" | "--src" => Match::Source { net: parse_net(option, value)?, negated },
            "-d" | "--destination" | "--dst" => Match::Destination { net: parse_net(option, value)?, negated },
            "-p" | "--protocol" => {
                let spec = ProtoSpec::parse(value).ok_or_else(|| Problem::bad(option, format!("unknown protocol `{value}`")))?;
                self.protocol = Some(spec.clone());
                Match::Protocol { spec, negated }
            }
            "-i" | "--in-interface" => Match::InInterface { name: value.to_string(), negated },
            _ => Match::OutInterface { name: value.to_string(), negated },
        };
        self.base.push(m);
        Ok(())
    }

    fn open(&mut self, option: &str, name: String) -> Result<Owner, Problem> {
        let kind = match option {
            "-m" | "--match" => {
                self.modules.push((name, Vec::new()));
                return Ok(Owner::Module(self.modules.len() - 1));
            }
            "-j" | "--jump" => TargetKind::Jump,
            _ => TargetKind::Goto,
        };
        if self.target.is_some() {
            return Err(Problem::Syntax("two targets".to_string()));
        }
        self.target = Some((kind, name, Vec::new()));
        Ok(Owner::Target)
    }

    /// Adds an option to its owner; an option outside any module belongs
    /// to the protocol's implicit module (`-p tcp --dport 80`).
    fn add_opt(&mut self, owner: &Owner, opt: Opt) -> Result<(), Problem> {
        match owner {
            Owner::Module(k) => self.modules[*k].1.push(opt),
            Owner::Target => {
                if let Some(target) = self.target.as_mut() {
                    target.2.push(opt);
                }
            }
            Owner::Base => {
                let Some(module) = self.protocol.as_ref().and_then(ProtoSpec::implicit_module) else {
                    return Err(Problem::Unsupported { owner: "rule (outside any -m)".to_string(), option: opt.name });
                };
                match self.modules.iter_mut().find(|(name, _)| name == module) {
                    Some((_, opts)) => opts.push(opt),
                    None => self.modules.push((module.to_string(), vec![opt])),
                }
            }
        }
        Ok(())
    }
}

fn parse_net(option: &str, value: &str) -> Result<IpNet, Problem> {
    if let Ok(net) = value.parse::<IpNet>() {
        return Ok(net);
    }
    value
        .parse::<IpAddr>()
        .map(IpNet::from)
        .map_err(|_| Problem::bad(option, format!("`{value}` is not an address or prefix (lists and names are not supported)")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn groups_base_module_and_target_options() {
        let (matches, target) = parse_spec(
            r#"! -s 10.244.0.0/16 -d 10.96.0.1/32 -p tcp -m comment --comment "a b" -m tcp --dport 443 -j KUBE-MARK-MASQ"#,
        )
        .unwrap();
        assert_eq!(target, Target::Jump("KUBE-MARK-MASQ".to_string()));
        assert!(matches!(matches[0], Match::Source { negated: true, .. }));
        assert!(matches!(matches[1], Match::Destination { negated: false, .. }));
        assert!(matches.iter().any(|m| matches!(m, Match::Comment(c) if c == "a b")));
        assert!(matches.iter().any(|m| matches!(m, Match::Port { first: 443, last: 443, .. })));
    }

    #[test]
    fn options_after_protocol_belong_to_its_implicit_module() {
        let (matches, _) = parse_spec("-p udp --dport 53 -j ACCEPT").unwrap();
        assert!(matches.iter().any(|m| matches!(m, Match::Port { first: 53, .. })));
    }

    #[test]
    fn option_outside_any_module_is_an_error() {
        assert!(matches!(parse_spec("--dport 53 -j ACCEPT"), Err(Problem::Unsupported { .. })));
    }

    #[test]
    fn malformed_rules_are_errors() {
        assert!(matches!(parse_spec("-s"), Err(Problem::BadValue { .. })));
        assert!(matches!(parse_spec("-s 10.0.0.0/8 !"), Err(Problem::Syntax(_))));
        assert!(matches!(parse_spec("-j A -j B"), Err(Problem::Syntax(_))));
        assert!(matches!(parse_spec("-s host.example -j ACCEPT"), Err(Problem::BadValue { .. })));
        assert!(matches!(parse_spec("bogus"), Err(Problem::Syntax(_))));
    }
}

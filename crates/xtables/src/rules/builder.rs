//! Building a [`Rule`] in the canonical order `iptables-save` prints:
//! `CHAIN [!] -s A [!] -d B [!] -i IF -p P <matches in order> -j TARGET`, so that the
//! written text is byte-identical to a dump of the same rule.

use super::rule::{Rule, Target, push_target};
use ipnet::IpNet;
use std::fmt::Write;
use std::net::IpAddr;

/// A rule under construction. Address and protocol options may be set in
/// any order; matches are appended as they come (the order iptables
/// keeps), straight into one buffer.
#[derive(Debug, Clone)]
pub struct RuleBuilder<'a> {
    chain: &'a str,
    src: Option<String>,
    dst: Option<String>,
    in_iface: Option<String>,
    proto: Option<&'static str>,
    /// Matches, each with its leading space.
    tail: String,
    target: Target<'a>,
}

impl Rule {
    /// Starts a rule in `chain`.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(chain: &str) -> RuleBuilder<'_> {
        RuleBuilder { chain, src: None, dst: None, in_iface: None, proto: None, tail: String::with_capacity(96), target: Target::None }
    }
}

impl<'a> RuleBuilder<'a> {
    /// `-s <net>`.
    pub fn src(mut self, net: &str) -> Self {
        self.src = Some(format!(" -s {net}"));
        self
    }

    /// `! -s <net>`.
    pub fn not_src(mut self, net: &str) -> Self {
        self.src = Some(format!(" ! -s {net}"));
        self
    }

    /// `-d <net>`.
    pub fn dst(mut self, net: &str) -> Self {
        self.dst = Some(format!(" -d {net}"));
        self
    }

    /// `! -d <net>`.
    pub fn not_dst(mut self, net: &str) -> Self {
        self.dst = Some(format!(" ! -d {net}"));
        self
    }

    /// `-i <iface>` (`+` ending a prefix).
    pub fn in_iface(mut self, iface: &str) -> Self {
        self.in_iface = Some(format!(" -i {iface}"));
        self
    }

    /// `! -i <iface>`.
    pub fn not_in_iface(mut self, iface: &str) -> Self {
        self.in_iface = Some(format!(" ! -i {iface}"));
        self
    }

    /// `-p <proto>`.
    pub fn proto(mut self, proto: &'static str) -> Self {
        self.proto = Some(proto);
        self
    }

    /// `-m comment --comment <text>`, quoted as iptables-save quotes it.
    pub fn comment(mut self, text: &str) -> Self {
        self.tail.push_str(" -m comment --comment ");
        push_quoted(&mut self.tail, text);
        self
    }

    /// `-p <proto> -m <proto> --dport <port>`.
    pub fn dport(mut self, proto: &'static str, port: u16) -> Self {
        let _ = write!(self.tail, " -m {proto} --dport {port}");
        self.proto(proto)
    }

    /// A match module with its options, e.g. `-m addrtype --dst-type LOCAL`.
    pub fn matching(mut self, text: &str) -> Self {
        self.tail.push(' ');
        self.tail.push_str(text);
        self
    }

    /// `-j <chain>`: a jump to another chain.
    pub fn jump(self, chain: &'a str) -> Self {
        self.target(Target::Jump(chain))
    }

    /// The rule's target.
    pub fn target(self, target: Target<'a>) -> Self {
        Self { target, ..self }
    }

    /// The rule: its line allocated once, at its exact length.
    pub fn build(mut self) -> Rule {
        let matches = self.tail.len();
        push_target(&mut self.tail, self.target);
        let (src, dst) = (self.src.as_deref().unwrap_or_default(), self.dst.as_deref().unwrap_or_default());
        let in_iface = self.in_iface.as_deref().unwrap_or_default();
        let proto = self.proto.map_or(0, |p| p.len() + 4);
        let mut out = String::with_capacity(self.chain.len() + src.len() + dst.len() + in_iface.len() + proto + self.tail.len());
        out.push_str(self.chain);
        let chain_end = out.len();
        out.push_str(src);
        out.push_str(dst);
        out.push_str(in_iface);
        if let Some(proto) = self.proto {
            out.push_str(" -p ");
            out.push_str(proto);
        }
        let matches_end = out.len() + matches;
        out.push_str(&self.tail);
        Rule::from_line(out, chain_end, matches_end, self.target)
    }
}

/// `ip/32` or `ip/128`: how iptables-save prints a single address.
pub fn host(ip: IpAddr) -> String {
    let len = if ip.is_ipv4() { 32 } else { 128 };
    format!("{ip}/{len}")
}

/// A network as iptables-save prints it: host bits cleared.
pub fn net(net: &IpNet) -> String {
    net.trunc().to_string()
}

/// Quotes one argument the way iptables-save does (`xtables_save_string`):
/// bare when it is only letters, digits, `_` and `-`; otherwise in double
/// quotes with `"`, `\` and `'` escaped.
pub fn quote_arg(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    push_quoted(&mut out, value);
    out
}

/// Appends `value` to `out`, quoted as [`quote_arg`] does.
fn push_quoted(out: &mut String, value: &str) {
    let safe = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !value.is_empty() && value.chars().all(safe) {
        out.push_str(value);
        return;
    }
    out.push('"');
    for c in value.chars() {
        if matches!(c, '"' | '\\' | '\'') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn prints_options_in_iptables_save_order() {
        let rule = Rule::new("KUBE-SVC-X")
            .comment("ns/svc:p cluster IP")
            .dport("tcp", 80)
            .dst("172.30.0.41/32")
            .not_src("10.0.0.0/8")
            .jump("KUBE-MARK-MASQ")
            .build()
            .to_string();
        let want = "KUBE-SVC-X ! -s 10.0.0.0/8 -d 172.30.0.41/32 -p tcp \
                    -m comment --comment \"ns/svc:p cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ";
        assert_eq!(rule, want);
    }

    #[test]
    fn quotes_like_xtables_save_string() {
        assert_eq!(quote_arg("plain-word_1"), "plain-word_1");
        assert_eq!(quote_arg("ns/svc:p"), "\"ns/svc:p\"");
        assert_eq!(quote_arg("say \"hi\""), "\"say \\\"hi\\\"\"");
        assert_eq!(quote_arg(""), "\"\"");
    }

    #[test]
    fn networks_print_without_host_bits() {
        let n: IpNet = "10.1.2.3/8".parse().unwrap();
        assert_eq!(net(&n), "10.0.0.0/8");
        assert_eq!(host("fd00::1".parse().unwrap()), "fd00::1/128");
    }

    #[test]
    fn a_rule_without_target_is_comment_only() {
        let rule = Rule::new("KUBE-FW-X").comment("other traffic").build().to_string();
        assert_eq!(rule, "KUBE-FW-X -m comment --comment \"other traffic\"");
    }
}

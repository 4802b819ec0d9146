//! One rule line, written in the canonical order `iptables-save` prints:
//! `CHAIN [!] -s A [!] -d B -p P <matches in order> -j TARGET`, so that the
//! rendered text is byte-identical to a dump of the same rule.

use ipnet::IpNet;
use std::fmt::Write;
use std::net::IpAddr;

/// A rule under construction. Address and protocol options may be set in
/// any order; matches and the target are appended as they come (the order
/// iptables keeps), straight into one buffer.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    chain: String,
    src: Option<String>,
    dst: Option<String>,
    proto: Option<&'static str>,
    /// Matches then target, each with its leading space.
    tail: String,
}

impl Rule {
    /// An empty rule in `chain`.
    pub(crate) fn new(chain: &str) -> Self {
        Self { chain: chain.to_string(), src: None, dst: None, proto: None, tail: String::with_capacity(96) }
    }

    /// `-s <net>`.
    pub(crate) fn src(mut self, net: &str) -> Self {
        self.src = Some(format!(" -s {net}"));
        self
    }

    /// `! -s <net>`.
    pub(crate) fn not_src(mut self, net: &str) -> Self {
        self.src = Some(format!(" ! -s {net}"));
        self
    }

    /// `-d <net>`.
    pub(crate) fn dst(mut self, net: &str) -> Self {
        self.dst = Some(format!(" -d {net}"));
        self
    }

    /// `! -d <net>`.
    pub(crate) fn not_dst(mut self, net: &str) -> Self {
        self.dst = Some(format!(" ! -d {net}"));
        self
    }

    /// `-p <proto>`.
    pub(crate) fn proto(mut self, proto: &'static str) -> Self {
        self.proto = Some(proto);
        self
    }

    /// `-m comment --comment <text>`, quoted as iptables-save quotes it.
    pub(crate) fn comment(mut self, text: &str) -> Self {
        self.tail.push_str(" -m comment --comment ");
        push_quoted(&mut self.tail, text);
        self
    }

    /// `-p <proto> -m <proto> --dport <port>`.
    pub(crate) fn dport(mut self, proto: &'static str, port: u16) -> Self {
        let _ = write!(self.tail, " -m {proto} --dport {port}");
        self.proto(proto)
    }

    /// A match module with its options, e.g. `-m addrtype --dst-type LOCAL`.
    pub(crate) fn matching(mut self, text: &str) -> Self {
        self.tail.push(' ');
        self.tail.push_str(text);
        self
    }

    /// `-j <target and its options>`.
    pub(crate) fn jump(mut self, target: &str) -> Self {
        self.tail.push_str(" -j ");
        self.tail.push_str(target);
        self
    }

    /// The rule line without the leading `-A `.
    pub(crate) fn build(self) -> String {
        let mut out = self.chain;
        out.reserve(self.tail.len() + 48);
        out.push_str(self.src.as_deref().unwrap_or_default());
        out.push_str(self.dst.as_deref().unwrap_or_default());
        if let Some(proto) = self.proto {
            out.push_str(" -p ");
            out.push_str(proto);
        }
        out.push_str(&self.tail);
        out
    }
}

/// `ip/32` or `ip/128`: how iptables-save prints a single address.
pub(crate) fn host(ip: IpAddr) -> String {
    let len = if ip.is_ipv4() { 32 } else { 128 };
    format!("{ip}/{len}")
}

/// A network as iptables-save prints it: host bits cleared.
pub(crate) fn net(net: &IpNet) -> String {
    net.trunc().to_string()
}

/// Quotes one argument the way iptables-save does (`xtables_save_string`):
/// bare when it is only letters, digits, `_` and `-`; otherwise in double
/// quotes with `"`, `\` and `'` escaped.
pub(crate) fn quote_arg(value: &str) -> String {
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
            .build();
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
        let rule = Rule::new("KUBE-FW-X").comment("other traffic").build();
        assert_eq!(rule, "KUBE-FW-X -m comment --comment \"other traffic\"");
    }
}

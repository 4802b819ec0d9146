//! One UDP conntrack entry, as `conntrack -L -p udp` prints it:
//! `udp 17 29 src=A dst=B sport=P dport=Q [UNREPLIED] src=C dst=D sport=R dport=S mark=0 use=1`
//! (the first tuple is the original direction, the second the reply).

use std::net::IpAddr;

/// The parts of a UDP flow the cleanup looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpFlow {
    /// Original destination address: the service address the client used.
    pub orig_dst: IpAddr,
    /// Original destination port.
    pub orig_dport: u16,
    /// Reply source: the NAT target (the endpoint), or `orig_dst` when the
    /// flow was not NATed.
    pub reply_src: IpAddr,
}

/// The UDP flows in `conntrack -L` output; lines it cannot read (other
/// protocols, summary lines) are skipped.
pub fn parse_flows(text: &str) -> Vec<UdpFlow> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<UdpFlow> {
    let mut words = line.split_whitespace();
    if words.next()? != "udp" {
        return None;
    }
    let (mut dsts, mut srcs, mut dports) = (Vec::new(), Vec::new(), Vec::new());
    for word in words {
        match word.split_once('=') {
            Some(("dst", v)) => dsts.push(v),
            Some(("src", v)) => srcs.push(v),
            Some(("dport", v)) => dports.push(v),
            _ => {}
        }
    }
    Some(UdpFlow {
        orig_dst: dsts.first()?.parse().ok()?,
        orig_dport: dports.first()?.parse().ok()?,
        reply_src: srcs.get(1)?.parse().ok()?,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_tuples_and_skips_other_lines() {
        let text = "udp      17 99 src=10.244.0.5 dst=10.96.0.10 sport=4000 dport=53 [UNREPLIED] src=10.244.1.3 dst=10.244.0.5 sport=53 dport=4000 mark=0 use=1\n\
                    tcp      6 431999 ESTABLISHED src=10.0.0.1 dst=10.0.0.2 sport=1 dport=2 src=10.0.0.2 dst=10.0.0.1 sport=2 dport=1 [ASSURED] mark=0 use=1\n\
                    udp      17 20 src=fd00::5 dst=fd00:96::a sport=4000 dport=53 src=fd00:1::3 dst=fd00::5 sport=53 dport=4000 mark=0 use=1\n\
                    conntrack v1.4.7 (conntrack-tools): 3 flow entries have been shown.\n";
        let flows = parse_flows(text);
        assert_eq!(
            flows,
            vec![
                UdpFlow { orig_dst: "10.96.0.10".parse().unwrap(), orig_dport: 53, reply_src: "10.244.1.3".parse().unwrap() },
                UdpFlow { orig_dst: "fd00:96::a".parse().unwrap(), orig_dport: 53, reply_src: "fd00:1::3".parse().unwrap() },
            ]
        );
    }

    #[test]
    fn a_truncated_line_is_skipped() {
        assert!(parse_flows("udp 17 99 src=10.244.0.5 dst=10.96.0.10 sport=4000 dport=53").is_empty());
        assert!(parse_flows("udp 17 99 src=x dst=y sport=1 dport=2 src=z dst=w").is_empty());
    }
}

//! IPVS's connection table (`/proc/net/ip_vs_conn`, what `ipvsadm -Lnc`
//! prints): the connections still open per virtual service.
//!
//! The drain of IPVS mode's leftovers waits for these rather than for the
//! real servers' `ActiveConn` counters: the kernel keeps a counter per
//! real server and moves a connection between "active" and "inactive" as
//! its state changes, and a counter was seen to stay above zero while the
//! table held only `TIME_WAIT` entries for that virtual server, which made
//! the drain wait for its limit. The table itself says which connections
//! still carry data. IPVS's generic netlink family has no command that
//! lists connections, so the table is read from procfs, in the netns of
//! the calling thread (`/proc/thread-self/net`).

use crate::Error;
use crate::virtual_server::IpProtocol;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Where the kernel shows the table of the calling thread's netns.
const TABLE: &str = "/proc/thread-self/net/ip_vs_conn";

/// A virtual service as a connection names it: protocol, virtual address
/// and port.
pub type VirtualKey = (IpProtocol, IpAddr, u16);

/// The IPVS TCP and SCTP states of a connection through a virtual server
/// that may still carry data (one direction at least). Not counted:
/// `TIME_WAIT`, `CLOSE`, `NONE` (closed); UDP entries (no state: a UDP
/// virtual server has no established connections to wait for, its
/// `ActiveConn` is 0 too); and `SYN_SENT` / `SYNACK`, which a virtual
/// server's connection, opened by a client, only reaches as a ghost
/// once another mode translates new connections: a new connection that
/// reuses the client port of a closed IPVS connection to the same real
/// server has its replies (forwarded, never through IPVS's input) matched
/// to the old entry by IPVS's output hook, which moves it from
/// `TIME_WAIT` to `SYN_SENT` and keeps refreshing it for as long as the
/// new connection lives (seen in the VM test: a dozen such entries after
/// the switch kept the drain waiting).
const OPEN_STATES: [&str; 7] = ["ESTABLISHED", "SYN_RECV", "FIN_WAIT", "CLOSE_WAIT", "LAST_ACK", "SHUTDOWN_SENT", "SHUTDOWN_RECEIVED"];

/// The open connections per virtual service in this netns's table (a
/// kernel without IPVS has no table: empty).
pub fn open_connections() -> Result<BTreeMap<VirtualKey, u64>, Error> {
    match std::fs::read_to_string(TABLE) {
        Ok(text) => Ok(count_open(&text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(source) => Err(Error::ConnectionTable { path: TABLE.to_string(), source }),
    }
}

/// The open connections per virtual service in `text` (the table's
/// format: a header line, then `Pro FromIP FPrt ToIP TPrt DestIP DPrt
/// State Expires …`, IPv4 addresses as 8 hex digits, IPv6 ones as 8
/// colon-separated groups, ports as 4 hex digits). Lines that do not
/// parse are skipped.
pub fn count_open(text: &str) -> BTreeMap<VirtualKey, u64> {
    let mut open = BTreeMap::new();
    for line in text.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [protocol, _, _, vaddr, vport, _, _, state, ..] = fields[..] else { continue };
        if !OPEN_STATES.contains(&state) {
            continue;
        }
        let protocol = match protocol {
            "TCP" => IpProtocol::Tcp,
            "UDP" => IpProtocol::Udp,
            "SCTP" => IpProtocol::Sctp,
            _ => continue,
        };
        let (Some(address), Ok(port)) = (parse_address(vaddr), u16::from_str_radix(vport, 16)) else { continue };
        *open.entry((protocol, address, port)).or_insert(0) += 1;
    }
    open
}

/// An address as the table prints it.
fn parse_address(text: &str) -> Option<IpAddr> {
    if text.contains(':') {
        return text.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    if text.len() != 8 {
        return None;
    }
    u32::from_str_radix(text, 16).ok().map(|bits| IpAddr::V4(Ipv4Addr::from(bits)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A table as a 6.x kernel prints it (header included).
    const SAMPLE: &str = "\
Pro FromIP   FPrt ToIP     TPrt DestIP   DPrt State       Expires PEName PEData
TCP 0AF40004 C350 0A600A0A 0050 0AF40002 1F90 ESTABLISHED     899
TCP 0AF40004 C351 0A600A0A 0050 0AF40003 1F90 ESTABLISHED     899
TCP C0000202 D000 0A000002 7918 0AF40002 1F90 TIME_WAIT       119
TCP C0000202 D001 0A000002 7918 0AF40002 1F90 FIN_WAIT        110
TCP C0000202 D002 0A000002 791A 0AF40003 1F90 CLOSE             9
TCP C0000202 D003 0A000002 791A 0AF40003 1F90 SYN_SENT        119
UDP 0AF40004 9C40 0A60000A 0035 0AF40005 0035 UDP             299
TCP fd00:0000:0000:0000:0000:0000:0000:0004 C350 fd00:0000:0000:0000:0000:0000:0000:0a0a 0050 fd00:0000:0000:0000:0000:0000:0000:0002 1F90 ESTABLISHED     899
";

    #[test]
    fn counts_open_connections_per_virtual_service() {
        let open = count_open(SAMPLE);
        let cluster_ip = (IpProtocol::Tcp, "10.96.10.10".parse().unwrap(), 80);
        let node_port = (IpProtocol::Tcp, "10.0.0.2".parse().unwrap(), 31000);
        let v6 = (IpProtocol::Tcp, "fd00::a0a".parse().unwrap(), 80);
        assert_eq!(open.get(&cluster_ip), Some(&2));
        // FIN_WAIT still carries the other direction; TIME_WAIT does not.
        assert_eq!(open.get(&node_port), Some(&1));
        assert_eq!(open.get(&v6), Some(&1));
        // Only TIME_WAIT / CLOSE / SYN_SENT / UDP: nothing to wait for.
        assert_eq!(open.get(&(IpProtocol::Tcp, "10.0.0.2".parse().unwrap(), 31002)), None);
        assert_eq!(open.get(&(IpProtocol::Udp, "10.96.0.10".parse().unwrap(), 53)), None);
        assert_eq!(open.len(), 3);
    }

    #[test]
    fn skips_lines_it_cannot_read() {
        assert!(count_open("header\nTCP zz\nTCP 0A000001 1 2 3 4 5 ESTABLISHED 1\nTCP 0A000001 1 0A00000Z 0050 4 5 ESTABLISHED 1\n\n").is_empty());
    }
}

//! One replayed connection of a flow, from inside a client namespace: a
//! fresh TCP connection or UDP datagram, classified as answered (by which
//! endpoint, seen from which source), refused (TCP RST, or an ICMP error,
//! caught by a raw ICMP socket so a REJECT is told from a node that
//! answers with RST), or silence (a DROP).

use crate::echo::Answer;
use crate::tracer::Protocol;
use socket2::{Domain, SockAddr, Socket, Type};
use std::fmt;
use std::io::{ErrorKind, Read};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// An ICMP error that came back for a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icmp {
    /// Who sent it.
    pub from: Ipv4Addr,
    /// ICMP type (3: destination unreachable).
    pub kind: u8,
    /// ICMP code (3: port unreachable).
    pub code: u8,
}

impl Icmp {
    /// ICMP destination-unreachable / port-unreachable: what `reject`
    /// sends by default.
    pub fn is_port_unreachable(&self) -> bool {
        self.kind == 3 && self.code == 3
    }
}

/// How one replayed connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// An endpoint answered.
    Answered {
        /// The endpoint address:port the connection reached (after DNAT).
        ep: SocketAddr,
        /// The source address the endpoint saw (after any SNAT).
        peer: IpAddr,
    },
    /// Refused: with the ICMP error that came back, or `None` for a TCP
    /// RST.
    Refused(Option<Icmp>),
    /// No answer within the timeout.
    TimedOut,
    /// Anything else, with the reason.
    Failed(String),
}

impl fmt::Display for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seen::Answered { ep, peer } => write!(f, "answered by {ep} (peer {peer})"),
            Seen::Refused(None) => f.write_str("refused (TCP RST)"),
            Seen::Refused(Some(icmp)) => {
                write!(f, "refused (ICMP type {} code {} from {})", icmp.kind, icmp.code, icmp.from)
            }
            Seen::TimedOut => f.write_str("timed out"),
            Seen::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// One probe: protocol, optional source address, destination, timeout.
#[derive(Debug, Clone, Copy)]
pub struct Attempt {
    /// TCP or UDP (SCTP is not probed).
    pub protocol: Protocol,
    /// Source address to bind, or `None` to let the kernel choose.
    pub source: Option<IpAddr>,
    /// Where to.
    pub destination: SocketAddr,
    /// How long to wait for the connection and the answer.
    pub timeout: Duration,
}

impl Attempt {
    /// Makes the connection (or sends the datagram) and classifies how it
    /// ended. Call it on a thread inside the client's namespace.
    pub fn run(&self) -> Seen {
        let sniffer = match IcmpSniffer::open() {
            Ok(s) => s,
            Err(e) => return Seen::Failed(format!("raw ICMP socket: {e}")),
        };
        let (socket, port) = match self.bound_socket() {
            Ok(bound) => bound,
            Err(why) => return Seen::Failed(why),
        };
        let seen = match self.protocol {
            Protocol::Tcp => self.tcp(socket),
            Protocol::Udp => self.udp(socket),
            other => Seen::Failed(format!("{other} is not probed")),
        };
        match seen {
            Seen::Refused(_) => Seen::Refused(sniffer.error_for(self.protocol, port)),
            other => other,
        }
    }

    fn tcp(&self, socket: Socket) -> Seen {
        if let Err(e) = socket.connect_timeout(&SockAddr::from(self.destination), self.timeout) {
            return classify(&e, "connect");
        }
        let _ = socket.set_read_timeout(Some(self.timeout));
        let mut text = String::new();
        match TcpStream::from(socket).read_to_string(&mut text) {
            Ok(_) => parse(&text),
            Err(e) if is_timeout(&e) => Seen::Failed(format!("connected, no answer within {:?}", self.timeout)),
            Err(e) => Seen::Failed(format!("connected, then read failed: {e}")),
        }
    }

    fn udp(&self, socket: Socket) -> Seen {
        let socket = UdpSocket::from(socket);
        // connect() so an ICMP error comes back as ECONNREFUSED.
        if let Err(e) = socket.connect(self.destination) {
            return classify(&e, "connect");
        }
        if let Err(e) = socket.send(b"ping\n") {
            return classify(&e, "send");
        }
        let _ = socket.set_read_timeout(Some(self.timeout));
        let mut buf = [0u8; 2048];
        match socket.recv(&mut buf) {
            Ok(n) => parse(&String::from_utf8_lossy(&buf[..n])),
            Err(e) => classify(&e, "recv"),
        }
    }

    /// A socket bound to the source address (if any) and a source port no
    /// other probe of this process used, so no two probes share a 4-tuple.
    fn bound_socket(&self) -> Result<(Socket, u16), String> {
        let ty = match self.protocol {
            Protocol::Udp => Type::DGRAM,
            _ => Type::STREAM,
        };
        let socket =
            Socket::new(Domain::for_address(self.destination), ty, None).map_err(|e| format!("socket: {e}"))?;
        let ip = self.source.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        for _ in 0..64 {
            let port = next_source_port();
            match socket.bind(&SockAddr::from(SocketAddr::new(ip, port))) {
                Ok(()) => return Ok((socket, port)),
                Err(e) if e.kind() == ErrorKind::AddrInUse => continue,
                Err(e) => return Err(format!("bind {ip}:{port}: {e}")),
            }
        }
        Err(format!("bind {ip}: no free source port"))
    }
}

/// Source ports in turn through 20000–60999, starting at an offset from
/// the process id.
fn next_source_port() -> u16 {
    const FIRST: u32 = 20_000;
    const COUNT: u32 = 41_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed).wrapping_add(std::process::id().wrapping_mul(7919));
    u16::try_from(FIRST + n % COUNT).unwrap_or(u16::MAX)
}

fn parse(text: &str) -> Seen {
    match Answer::parse(text) {
        Some(answer) => Seen::Answered { ep: answer.local, peer: answer.peer.ip() },
        None => Seen::Failed(format!("unexpected answer {text:?}")),
    }
}

fn classify(e: &std::io::Error, step: &str) -> Seen {
    match e.kind() {
        ErrorKind::ConnectionRefused => Seen::Refused(None),
        _ if is_timeout(e) => Seen::TimedOut,
        _ => Seen::Failed(format!("{step}: {e}")),
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock)
}

/// A raw ICMP socket opened before the probe: it gets a copy of every
/// ICMP packet the namespace receives, so the error that refused a probe
/// can be found by the source port quoted in it.
struct IcmpSniffer(Socket);

impl IcmpSniffer {
    fn open() -> std::io::Result<Self> {
        let socket = Socket::new(Domain::IPV4, Type::from(nix::libc::SOCK_RAW), Some(socket2::Protocol::ICMPV4))?;
        socket.set_nonblocking(true)?;
        Ok(Self(socket))
    }

    /// The ICMP error that quotes a `protocol` packet from source `port`,
    /// among the packets received so far.
    fn error_for(&self, protocol: Protocol, port: u16) -> Option<Icmp> {
        let proto = match protocol {
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
            _ => return None,
        };
        let mut socket = &self.0;
        let mut buf = [0u8; 1500];
        while let Ok(n) = socket.read(&mut buf) {
            if let Some(icmp) = quoted_error(&buf[..n], proto, port) {
                return Some(icmp);
            }
        }
        None
    }
}

/// Reads an IPv4 packet carrying an ICMP error that quotes a packet of
/// `proto` from source port `port`.
fn quoted_error(packet: &[u8], proto: u8, port: u16) -> Option<Icmp> {
    let ihl = usize::from(packet.first()? & 0x0f) * 4;
    let from = Ipv4Addr::new(*packet.get(12)?, *packet.get(13)?, *packet.get(14)?, *packet.get(15)?);
    let kind = *packet.get(ihl)?;
    let code = *packet.get(ihl + 1)?;
    // Errors only: destination unreachable, source quench, redirect, time exceeded, parameter problem.
    if !matches!(kind, 3 | 4 | 5 | 11 | 12) {
        return None;
    }
    let inner = ihl + 8;
    let inner_ihl = usize::from(packet.get(inner)? & 0x0f) * 4;
    let inner_proto = *packet.get(inner + 9)?;
    let l4 = inner + inner_ihl;
    let source_port = u16::from_be_bytes([*packet.get(l4)?, *packet.get(l4 + 1)?]);
    (inner_proto == proto && source_port == port).then_some(Icmp { from, kind, code })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_error_quoting_our_port() {
        // IPv4 header from 10.244.0.1, ICMP 3/3, quoting TCP 10.244.0.200:40001 -> 10.96.10.10:81.
        let mut packet = vec![0x45, 0, 0, 56, 0, 0, 0, 0, 64, 1, 0, 0, 10, 244, 0, 1, 10, 244, 0, 200];
        packet.extend([3, 3, 0, 0, 0, 0, 0, 0]);
        packet.extend([0x45, 0, 0, 60, 0, 0, 0, 0, 64, 6, 0, 0, 10, 244, 0, 200, 10, 96, 10, 10]);
        packet.extend([0x9c, 0x41, 0, 81, 0, 0, 0, 0]);
        let icmp = quoted_error(&packet, 6, 40001).unwrap();
        assert_eq!(icmp, Icmp { from: Ipv4Addr::new(10, 244, 0, 1), kind: 3, code: 3 });
        assert!(icmp.is_port_unreachable());
        assert_eq!(quoted_error(&packet, 6, 40002), None);
        assert_eq!(quoted_error(&packet, 17, 40001), None);
        assert_eq!(quoted_error(&packet[..30], 6, 40001), None);
    }
}

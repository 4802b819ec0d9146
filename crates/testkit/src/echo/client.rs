//! The client side: fresh TCP connections or UDP datagrams sent from inside
//! a namespace, each classified as answered, refused or timed out.

use super::Answer;
use crate::netns::Netns;
use anyhow::Result;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::fmt;
use std::io::{ErrorKind, Read};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Transport protocol of a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// One TCP connection per attempt; the server answers on accept.
    Tcp,
    /// One datagram from a fresh socket per attempt; the server answers it.
    Udp,
}

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
        })
    }
}

/// Where to send, from which source address, and how long to wait.
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    /// TCP or UDP.
    pub proto: Proto,
    /// Destination (a ClusterIP, node IP:NodePort, LB IP, pod IP…).
    pub dst: SocketAddr,
    /// Source address to bind, or `None` to let the kernel choose.
    pub src: Option<IpAddr>,
    /// How long to wait for the connection and for the answer. An expected
    /// drop costs this much, so keep it short (1–2 s).
    pub timeout: Duration,
}

/// How one attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// An echo endpoint answered.
    Answered(Answer),
    /// Refused: TCP RST or ICMP port-unreachable (what a REJECT rule sends).
    Refused,
    /// No answer within the timeout (what a DROP rule, or a black hole, gives).
    TimedOut,
    /// Anything else (unreachable host, garbled answer…), with the reason.
    Failed(String),
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Answered(a) => write!(f, "answered by {} (reached {}, endpoint saw {})", a.ep, a.local, a.peer),
            Outcome::Refused => f.write_str("refused"),
            Outcome::TimedOut => f.write_str("timed out"),
            Outcome::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// One attempt: how it ended and how long it took.
#[derive(Clone, Debug)]
pub struct Attempt {
    /// How it ended.
    pub outcome: Outcome,
    /// From the first packet to the outcome.
    pub took: Duration,
}

/// Makes `count` fresh attempts (new socket, new source port each) from
/// inside `ns`, one after the other, and returns how each ended. Errors only
/// if the namespace cannot be entered.
pub fn probe(ns: &Netns, probe: Probe, count: usize) -> Result<Vec<Attempt>> {
    ns.run(move || (0..count).map(|_| attempt(&probe)).collect())
}

fn attempt(probe: &Probe) -> Attempt {
    let start = Instant::now();
    let outcome = match probe.proto {
        Proto::Tcp => tcp_attempt(probe),
        Proto::Udp => udp_attempt(probe),
    };
    Attempt { outcome, took: start.elapsed() }
}

fn tcp_attempt(probe: &Probe) -> Outcome {
    let socket = match new_socket(probe, Type::STREAM, Protocol::TCP) {
        Ok(s) => s,
        Err(outcome) => return outcome,
    };
    if let Err(e) = socket.connect_timeout(&SockAddr::from(probe.dst), probe.timeout) {
        return classify(&e, "connect");
    }
    let _ = socket.set_read_timeout(Some(probe.timeout));
    let mut text = String::new();
    let mut stream = std::net::TcpStream::from(socket);
    match stream.read_to_string(&mut text) {
        Ok(_) => parse(&text),
        Err(e) if is_timeout(&e) => Outcome::Failed(format!("connected, but no answer within {:?}", probe.timeout)),
        Err(e) => Outcome::Failed(format!("connected, then read failed: {e}")),
    }
}

fn udp_attempt(probe: &Probe) -> Outcome {
    let socket = match new_socket(probe, Type::DGRAM, Protocol::UDP) {
        Ok(s) => s,
        Err(outcome) => return outcome,
    };
    let socket = std::net::UdpSocket::from(socket);
    // connect() so an ICMP port-unreachable comes back as ECONNREFUSED.
    if let Err(e) = socket.connect(probe.dst) {
        return classify(&e, "connect");
    }
    if let Err(e) = socket.send(b"ping\n") {
        return classify(&e, "send");
    }
    let _ = socket.set_read_timeout(Some(probe.timeout));
    let mut buf = [0u8; 2048];
    match socket.recv(&mut buf) {
        Ok(n) => parse(&String::from_utf8_lossy(&buf[..n])),
        Err(e) => classify(&e, "recv"),
    }
}

/// A socket of the probe's kind, bound to its source address if it has one
/// and to a source port no earlier probe of this process used (see
/// [`next_source_port`]).
fn new_socket(probe: &Probe, ty: Type, proto: Protocol) -> Result<Socket, Outcome> {
    let domain = Domain::for_address(probe.dst);
    let socket = Socket::new(domain, ty, Some(proto)).map_err(|e| Outcome::Failed(format!("socket: {e}")))?;
    let ip = probe.src.unwrap_or(if probe.dst.is_ipv4() { IpAddr::from([0, 0, 0, 0]) } else { IpAddr::from([0u16; 8]) });
    let mut last = None;
    for _ in 0..16 {
        match socket.bind(&SockAddr::from(SocketAddr::new(ip, next_source_port()))) {
            Ok(()) => return Ok(socket),
            Err(e) if e.kind() == ErrorKind::AddrInUse => last = Some(e),
            Err(e) => return Err(Outcome::Failed(format!("bind {ip}: {e}"))),
        }
    }
    Err(Outcome::Failed(format!("bind {ip}: no free source port ({last:?})")))
}

/// Source ports for probes, in turn through 20000–60999, so a test's
/// connections never reuse a 4-tuple. The kernel's ephemeral ports may
/// repeat across destinations, and a connection to another service address
/// that reached the same endpoint from the same port shortly before leaves
/// a conntrack entry (TIME_WAIT) whose reply tuple the new one clashes with;
/// IPVS with `conntrack=1` then loses the SYN and its retransmits. Seen in
/// IPVS mode as about 1 in 1000 connections timing out in 2 of 4 VM runs;
/// not seen in the 4 VM runs since.
fn next_source_port() -> u16 {
    const FIRST: u32 = 20_000;
    const COUNT: u32 = 41_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed).wrapping_add(std::process::id());
    u16::try_from(FIRST + n % COUNT).unwrap_or(u16::MAX)
}

fn parse(text: &str) -> Outcome {
    match Answer::parse(text) {
        Some(answer) => Outcome::Answered(answer),
        None => Outcome::Failed(format!("unexpected answer {text:?}")),
    }
}

fn classify(e: &std::io::Error, step: &str) -> Outcome {
    match e.kind() {
        ErrorKind::ConnectionRefused => Outcome::Refused,
        _ if is_timeout(e) => Outcome::TimedOut,
        _ => Outcome::Failed(format!("{step}: {e}")),
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock)
}

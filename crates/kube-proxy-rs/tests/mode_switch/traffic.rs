//! The traffic kept up through the switch: a server in each server pod
//! that tells every connection the peer it saw and then echoes; long-lived
//! connections that echo a few bytes every [`echo_every`]; openers that make a
//! fresh connection every few milliseconds. Every failure is recorded
//! with its time, so the test can say when service was missing and for
//! how long.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::netns::Netns;

/// How long a connect or a read may take before it counts as failed
/// (three times that in the VM, whose CPUs are emulated).
fn patience() -> Duration {
    if testkit::vm::inside() { Duration::from_secs(3) } else { Duration::from_secs(1) }
}

/// A service as a client reaches it, and the source its endpoint must see.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// For the figures: `ClusterIP`, `NodePort`, `ETP=Local`.
    pub kind: &'static str,
    /// The address dialled.
    pub addr: SocketAddr,
    /// The peer address the endpoint must see (masqueraded or not).
    pub peer: IpAddr,
    /// The client's source address, when not the one routing picks.
    pub from: Option<IpAddr>,
}

/// One failure: when (since the clock's start), which target, what.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Seconds since the [`Record`] started.
    pub at: f64,
    /// The target's kind.
    pub kind: &'static str,
    /// What went wrong.
    pub what: String,
}

/// A long-lived connection's echo that came back intact, late.
#[derive(Debug, Clone)]
pub struct Stall {
    /// When the round was sent (seconds since the [`Record`] started).
    pub at: f64,
    /// How long its echo took, in seconds.
    pub lasted: f64,
    /// The target's kind.
    pub kind: &'static str,
    /// Segments the client retransmitted meanwhile (0: nothing was lost
    /// on the client's side; the wait was elsewhere).
    pub retransmits: u32,
}

/// What the clients saw.
#[derive(Debug, Default)]
pub struct Seen {
    /// Fresh connections attempted, per target kind.
    pub attempts: Vec<(&'static str, usize)>,
    /// When each fresh connection was attempted (seconds since the
    /// [`Record`] started), all targets.
    pub attempted_at: Vec<f64>,
    /// Fresh connections that failed (refused, timed out, reset, or the
    /// endpoint saw the wrong peer).
    pub new_failed: Vec<Failure>,
    /// Long-lived connections that broke (reset, closed, wrong echo, or
    /// no echo within [`stall_limit`]).
    pub established_broken: Vec<Failure>,
    /// Echo rounds of long-lived connections that came back intact but
    /// late (over [`STALL`]).
    pub stalls: Vec<Stall>,
    /// Times this process was not run for over [`FREEZE`] (when the gap
    /// began, seconds since the [`Record`] started, and how long it was):
    /// a thread asleep 10 ms at a time woke up that much later.
    pub freezes: Vec<(f64, f64)>,
    /// Long-lived connections that kept echoing to the end.
    pub established_ok: usize,
}

/// The shared clock and log of the clients.
#[derive(Clone)]
pub struct Record {
    start: Instant,
    seen: Arc<Mutex<Seen>>,
    pub stop: Arc<AtomicBool>,
    /// Long-lived connections waiting for their echo over [`STUCK`] now.
    pub stuck: Arc<std::sync::atomic::AtomicUsize>,
}

/// A long-lived connection waiting this long for its echo is stuck (not
/// broken yet: [`stall_limit`]); the test then keeps the tables.
pub const STUCK: Duration = Duration::from_secs(5);

impl Record {
    /// A clock starting now.
    pub fn new() -> Self {
        Self { start: Instant::now(), seen: Arc::default(), stop: Arc::default(), stuck: Arc::default() }
    }

    /// Seconds since the start.
    pub fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn failure(&self, kind: &'static str, what: String) -> Failure {
        Failure { at: self.now(), kind, what }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// What was seen (after the clients stopped).
    pub fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap()
    }
}

/// Starts the server of the pod `ns` on `ip`:[`super::manifests::SERVER_PORT`]
/// until `stop`: each connection gets `peer=<ip> local=<ip>\n` (the source
/// it saw and the endpoint it reached), then its bytes back. One thread
/// with a task per connection: a thread each cost the VM's emulated CPUs
/// a clone and a stack per fresh connection, a hundred a second.
pub fn serve(ns: &Netns, ip: IpAddr, stop: Arc<AtomicBool>) {
    let addr = SocketAddr::new(ip, super::manifests::SERVER_PORT);
    let listener = ns.run(move || TcpListener::bind(addr)).unwrap().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(accept_until(listener, stop));
    });
}

/// Accepts and answers connections until `stop` (looked at every 100 ms);
/// the connections close with the runtime.
async fn accept_until(listener: TcpListener, stop: Arc<AtomicBool>) {
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    while !stop.load(Ordering::SeqCst) {
        let accepted = tokio::time::timeout(Duration::from_millis(100), listener.accept()).await;
        if let Ok(Ok((stream, peer))) = accepted {
            tokio::spawn(echo(stream, peer));
        }
    }
}

async fn echo(mut stream: tokio::net::TcpStream, peer: SocketAddr) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let local = stream.local_addr().map(|a| a.ip().to_string()).unwrap_or_default();
    if stream.write_all(format!("peer={} local={local}\n", peer.ip()).as_bytes()).await.is_err() {
        return;
    }
    let mut buf = [0u8; 64];
    while let Ok(n @ 1..) = stream.read(&mut buf).await {
        if stream.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// A connection to `target` from the current namespace whose endpoint saw
/// the right peer, with the reader past the `peer=` line, and the
/// endpoint reached.
fn connect(target: &Target) -> Result<(BufReader<TcpStream>, String), String> {
    let stream = dial(target).map_err(|e| format!("connect: {e}"))?;
    stream.set_read_timeout(Some(patience())).map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| format!("read peer: {e}"))?;
    let field = |key: &str| line.split_whitespace().find_map(|w| w.strip_prefix(key)).unwrap_or_default().to_string();
    let peer = field("peer=");
    if peer != target.peer.to_string() {
        return Err(format!("endpoint saw peer {peer:?}, want {}", target.peer));
    }
    Ok((reader, field("local=")))
}

/// A TCP connection to `target`, from its source address if it names one.
fn dial(target: &Target) -> std::io::Result<TcpStream> {
    let Some(from) = target.from else {
        return TcpStream::connect_timeout(&target.addr, patience());
    };
    let socket = socket2::Socket::new(socket2::Domain::for_address(target.addr), socket2::Type::STREAM, None)?;
    socket.bind(&SocketAddr::new(from, 0).into())?;
    socket.connect_timeout(&target.addr.into(), patience())?;
    Ok(socket.into())
}

/// One fresh connection to `target` from `ns`: the endpoint it reached,
/// or why it failed (refused, timed out, wrong peer).
pub fn probe(ns: &Netns, target: Target) -> Result<String, String> {
    ns.run(move || connect(&target).map(|(_, endpoint)| endpoint)).unwrap()
}

/// `count` long-lived connections to `target`, made from `ns`.
pub fn open_long_lived(ns: &Netns, target: Target, count: usize) -> Vec<BufReader<TcpStream>> {
    ns.run(move || (0..count).map(|_| connect(&target).expect("a long-lived connection").0).collect()).unwrap()
}

/// Echoes 8 bytes every [`echo_every`] on `conn` until stopped. A reset, the
/// peer's close, a wrong echo or no echo within [`stall_limit`] ends it
/// as broken (dropped); an echo that comes back intact after more than
/// [`STALL`] is recorded as a [`Stall`] and the connection goes on (late
/// is not dropped: TCP delivered every byte).
pub fn keep_alive(record: &Record, kind: &'static str, mut conn: BufReader<TcpStream>) {
    let mut round: u64 = 0;
    while !record.stopped() {
        round += 1;
        let began = record.now();
        let retransmits = total_retransmits(conn.get_ref());
        match echo_round(&mut conn, round, &record.stuck) {
            Ok(waited) if waited > STALL => {
                let retransmits = total_retransmits(conn.get_ref()).saturating_sub(retransmits);
                record.seen().stalls.push(Stall { at: began, lasted: waited.as_secs_f64(), kind, retransmits });
            }
            Ok(_) => {}
            Err(what) => {
                let port = conn.get_ref().local_addr().map(|a| a.port()).unwrap_or_default();
                let failure = record.failure(kind, format!("round {round} (client port {port}): {what}"));
                record.seen().established_broken.push(failure);
                return;
            }
        }
        std::thread::sleep(echo_every());
    }
    record.seen().established_ok += 1;
}

/// How often each long-lived connection echoes: 50 ms, 250 ms in the VM,
/// where 50 connections echoing every 50 ms (1,000 round trips a second,
/// each through IPVS or NAT) took the emulated CPUs the fresh connections
/// need. A dropped connection still shows within a round.
fn echo_every() -> Duration {
    if testkit::vm::inside() { Duration::from_millis(250) } else { Duration::from_millis(50) }
}

/// An echo round that took longer than this is a stall.
pub const STALL: Duration = Duration::from_secs(1);

/// How long a long-lived connection may go without its echo before it
/// counts as dropped: far beyond any retransmission a live connection
/// needs through the switch (emulated CPUs in the VM: more).
pub fn stall_limit() -> Duration {
    if testkit::vm::inside() { Duration::from_secs(30) } else { Duration::from_secs(10) }
}

/// One round on `conn`: `round`'s 8 bytes sent and read back; how long
/// the echo took, or why the connection is broken.
fn echo_round(conn: &mut BufReader<TcpStream>, round: u64, stuck: &std::sync::atomic::AtomicUsize) -> Result<Duration, String> {
    let sent = round.to_be_bytes();
    conn.get_mut().write_all(&sent).map_err(|e| format!("send: {e}"))?;
    let start = Instant::now();
    let mut back = [0u8; 8];
    let mut got = 0;
    let mut counted = false;
    let result = loop {
        if got == back.len() {
            break Ok(());
        }
        if !counted && start.elapsed() > STUCK {
            stuck.fetch_add(1, Ordering::SeqCst);
            counted = true;
        }
        match conn.read(&mut back[got..]) {
            Ok(0) => break Err("closed by the other end".to_string()),
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if start.elapsed() > stall_limit() {
                    break Err(format!("no echo for {:.0?}", start.elapsed()));
                }
            }
            Err(e) => break Err(e.to_string()),
        }
    };
    if counted {
        stuck.fetch_sub(1, Ordering::SeqCst);
    }
    result?;
    match back == sent {
        true => Ok(start.elapsed()),
        false => Err("echo came back wrong".to_string()),
    }
}

/// The segments TCP has retransmitted on `stream` so far (`tcpi_total_retrans`).
#[allow(unsafe_code)] // one getsockopt(TCP_INFO); neither std nor nix reads it
fn total_retransmits(stream: &TcpStream) -> u32 {
    use std::os::fd::AsRawFd;
    // SAFETY: tcp_info is plain data; getsockopt writes at most `len` bytes.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(stream.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, (&raw mut info).cast(), &raw mut len);
        if rc == 0 { info.tcpi_total_retrans } else { 0 }
    }
}

/// A gap in a 10 ms sleeper's wake-ups longer than this is a freeze.
pub const FREEZE: Duration = Duration::from_millis(300);

/// Until stopped, sleeps 10 ms at a time and records each wake-up that
/// came over [`FREEZE`] late: the clients' process (in the VM, the whole
/// emulated machine, whose CPUs the host may not run for a while) was
/// frozen, so a late echo then is the clients' lateness, not the path's.
pub fn watch_freezes(record: &Record) {
    let tick = Duration::from_millis(10);
    while !record.stopped() {
        let before = record.now();
        std::thread::sleep(tick);
        let gap = record.now() - before;
        if gap > (FREEZE + tick).as_secs_f64() {
            record.seen().freezes.push((before, gap));
        }
    }
}

/// From `ns`, a fresh connection to `target` every `every` until stopped
/// (not catching up after a slow one); each must reach an endpoint that
/// saw the right peer.
pub fn open_fresh(ns: &Netns, record: &Record, target: Target, every: Duration) {
    let record = record.clone();
    ns.run(move || {
        let mut attempts = 0;
        let mut attempted_at = Vec::new();
        while !record.stopped() {
            let next = Instant::now() + every;
            attempts += 1;
            attempted_at.push(record.now());
            if let Err(what) = connect(&target) {
                let failure = record.failure(target.kind, what);
                record.seen().new_failed.push(failure);
            }
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        let mut seen = record.seen();
        seen.attempts.push((target.kind, attempts));
        seen.attempted_at.extend(attempted_at);
    })
    .unwrap();
}

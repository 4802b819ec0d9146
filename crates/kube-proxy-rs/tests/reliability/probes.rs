//! Probe traffic running through a scenario: one thread inside the client
//! pod's namespace opens fresh TCP connections to the healthy services in
//! turn and counts the ones an echo pod answered and the ones that failed
//! (refused, timed out, garbled), keeping when and how each failed.

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Connect and read timeout of one probe: a connection to a service whose
/// rules are gone is lost in the wire's black hole and fails after this.
pub const TIMEOUT: Duration = Duration::from_millis(1000);
/// Pause between two probes (about 100 connections a second).
const PAUSE: Duration = Duration::from_millis(10);

/// Counts since the prober started or since the last [`Prober::take`].
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Connections an echo pod answered.
    pub answered: u64,
    /// Connections that failed.
    pub failed: u64,
    /// The first failures: seconds since the prober started, target, why.
    pub failures: Vec<String>,
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} connections, {} failed", self.answered + self.failed, self.failed)?;
        if !self.failures.is_empty() {
            write!(f, " (first: {})", self.failures.join("; "))?;
        }
        Ok(())
    }
}

/// The running probe thread; dropping it stops it.
pub struct Prober {
    stop: Arc<AtomicBool>,
    tally: Arc<Mutex<Tally>>,
    thread: Option<JoinHandle<()>>,
}

impl Prober {
    /// Starts probing `targets` in turn from inside the namespace `netns`
    /// (its name under `/run/netns`), with source address `src`.
    pub fn start(netns: &str, src: Ipv4Addr, targets: Vec<SocketAddr>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(Mutex::new(Tally::default()));
        let path = format!("/run/netns/{netns}");
        let (s, t) = (Arc::clone(&stop), Arc::clone(&tally));
        let thread = std::thread::spawn(move || {
            enter_netns(&path);
            probe_until_stopped(&s, &t, IpAddr::V4(src), &targets);
        });
        Self { stop, tally, thread: Some(thread) }
    }

    /// The counts since the last call (or the start), reset.
    pub fn take(&self) -> Tally {
        std::mem::take(&mut *self.tally.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Stops probing and returns the counts since the last [`Self::take`].
    pub fn finish(mut self) -> Tally {
        self.halt();
        self.take()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("probe thread panicked");
        }
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn enter_netns(path: &str) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("open {path}: {e}"));
    nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET).unwrap_or_else(|e| panic!("setns {path}: {e}"));
}

fn probe_until_stopped(stop: &AtomicBool, tally: &Mutex<Tally>, src: IpAddr, targets: &[SocketAddr]) {
    let start = Instant::now();
    for target in targets.iter().cycle() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let outcome = connect_once(src, *target);
        let mut t = tally.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match outcome {
            Ok(()) => t.answered += 1,
            Err(why) => {
                t.failed += 1;
                if t.failures.len() < 5 {
                    t.failures.push(format!("{:.1}s {target}: {why}", start.elapsed().as_secs_f64()));
                }
            }
        }
        drop(t);
        std::thread::sleep(PAUSE);
    }
}

/// One fresh connection from `src`, a source port no earlier probe used
/// (see testkit's echo client: a reused 4-tuple can clash in conntrack),
/// and the echo line read back.
fn connect_once(src: IpAddr, target: SocketAddr) -> Result<(), String> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).map_err(|e| e.to_string())?;
    socket.set_reuse_address(true).map_err(|e| e.to_string())?;
    socket.bind(&SocketAddr::new(src, next_source_port()).into()).map_err(|e| format!("bind: {e}"))?;
    socket.connect_timeout(&target.into(), TIMEOUT).map_err(|e| format!("connect: {e}"))?;
    let mut stream = TcpStream::from(socket);
    stream.set_read_timeout(Some(TIMEOUT)).map_err(|e| e.to_string())?;
    let mut text = String::new();
    stream.read_to_string(&mut text).map_err(|e| format!("read: {e}"))?;
    match testkit::echo::Answer::parse(&text) {
        Some(_) => Ok(()),
        None => Err(format!("unexpected answer {text:?}")),
    }
}

fn next_source_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    u16::try_from(20_000 + n % 41_000).unwrap_or(u16::MAX)
}

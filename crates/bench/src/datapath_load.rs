//! `kprs-bench datapath`'s heavier figures through the same ClusterIP:
//! bulk throughput (one connection uploading `--bulk-mib` MiB to a sink
//! endpoint, timed until the endpoint's byte count comes back) and the
//! proxy's memory with `--concurrent` connections held open at once (each
//! opened, one byte each way, then kept). In a kernel mode the bytes never
//! enter the proxy; in userspace mode every connection is two sockets of
//! the proxy and its bytes are spliced through it.
//!
//! The endpoint tells the kinds apart by the first byte a connection sends
//! (see `datapath::serve`): [`BULK`] for the sink, [`HOLD`] for a held
//! echo, anything else for the one-byte echo of the connection rate.

use crate::proxy_process::{ProxyProcess, status_kib};
use crate::stats::Samples;
use anyhow::{Context, Result, bail};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// First byte of a bulk upload: the endpoint reads to the end and answers
/// with the count (8 bytes, little-endian).
pub const BULK: u8 = b'B';
/// First byte of a held connection: echoed, then the endpoint keeps it.
pub const HOLD: u8 = b'H';

/// The memory figures of the held connections.
#[derive(Debug, Clone)]
pub struct Held {
    /// Connections open at once.
    pub open: usize,
    /// Connections that failed to open.
    pub failed: usize,
    /// Seconds to open them, one after another.
    pub open_time: Duration,
    /// The proxy's `VmRSS` before, in KiB.
    pub rss_before_kib: u64,
    /// Its `VmRSS` with all of them open, in KiB.
    pub rss_held_kib: u64,
    /// Its `VmHWM` then (peak since start), in KiB.
    pub peak_kib: u64,
}

/// Uploads `mib` MiB through `target` and waits for the endpoint's count;
/// MiB/s.
pub fn bulk_round(target: SocketAddr, mib: usize) -> Result<f64> {
    let chunk = vec![0x5au8; 1 << 20];
    let start = Instant::now();
    let mut stream = TcpStream::connect_timeout(&target, Duration::from_secs(2)).context("connect")?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    stream.write_all(&[BULK])?;
    for _ in 0..mib {
        stream.write_all(&chunk).context("upload")?;
    }
    stream.shutdown(Shutdown::Write)?;
    let mut count = [0u8; 8];
    stream.read_exact(&mut count).context("the endpoint's byte count")?;
    let elapsed = start.elapsed();
    let expected = u64::try_from(mib << 20)?;
    if u64::from_le_bytes(count) != expected {
        bail!("the endpoint counted {} bytes of {expected}", u64::from_le_bytes(count));
    }
    Ok(mib as f64 / elapsed.as_secs_f64())
}

/// `rounds` bulk uploads of `mib` MiB, run in `client`.
pub fn bulk_rounds(client: &crate::namespace::BenchNetns, target: SocketAddr, mib: usize, rounds: usize) -> Result<Samples> {
    let mut rates = Samples::default();
    for _ in 0..rounds {
        rates.push(client.run(move || bulk_round(target, mib))??);
    }
    Ok(rates)
}

/// Opens `n` held connections through `target` from `client`, reads the
/// proxy's memory with them all open, then closes them.
pub fn hold(client: &crate::namespace::BenchNetns, target: SocketAddr, n: usize, proxy: &ProxyProcess) -> Result<Held> {
    let rss_before_kib = rss_kib(proxy)?;
    let start = Instant::now();
    let (held, failed) = client.run(move || open_held(target, n))??;
    let open_time = start.elapsed();
    // Let the proxy's tasks settle (every connection spliced its byte).
    std::thread::sleep(Duration::from_millis(500));
    let rss_held_kib = rss_kib(proxy)?;
    let peak_kib = proxy.peak_rss_kib()?;
    let open = held.len();
    drop(held);
    Ok(Held { open, failed, open_time, rss_before_kib, rss_held_kib, peak_kib })
}

fn open_held(target: SocketAddr, n: usize) -> Result<(Vec<TcpStream>, usize)> {
    let mut held = Vec::with_capacity(n);
    let mut failed = 0;
    while held.len() < n && failed <= 100 {
        match open_one(target) {
            Ok(stream) => held.push(stream),
            Err(_) => failed += 1,
        }
    }
    Ok((held, failed))
}

fn open_one(target: SocketAddr) -> Result<TcpStream> {
    let mut stream = TcpStream::connect_timeout(&target, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.write_all(&[HOLD])?;
    let mut byte = [0u8; 1];
    stream.read_exact(&mut byte)?;
    Ok(stream)
}

/// The proxy's `VmRSS` in KiB.
fn rss_kib(proxy: &ProxyProcess) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", proxy.pid())).context("the proxy's status")?;
    status_kib(&status, "VmRSS:").context("no VmRSS")
}

/// The bench process's open-files limit raised (as root) to hold `n`
/// connections at both ends, the proxy (a child, inheriting it) too.
pub fn raise_open_files(n: usize) -> Result<()> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let wanted = u64::try_from(8 * n + 4096)?;
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < wanted {
        setrlimit(Resource::RLIMIT_NOFILE, wanted.max(soft), wanted.max(hard))
            .context("raise RLIMIT_NOFILE (root needed)")?;
    }
    Ok(())
}

/// The endpoint's side of a bulk upload: counts to the end, answers.
pub fn sink(mut stream: TcpStream) {
    let mut buffer = vec![0u8; 256 * 1024];
    let mut count = 0u64;
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => count += n as u64,
            Err(_) => return,
        }
    }
    let _ = stream.write_all(&count.to_le_bytes());
}

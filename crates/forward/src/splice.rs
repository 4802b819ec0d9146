//! Byte copying between a client's and an endpoint's TCP connections,
//! zero-copy through a pipe with `splice(2)` (socket → pipe → socket, the
//! bytes never enter user space). A direction's end of stream is passed on
//! as a half-close (`shutdown(SHUT_WR)`); an error in either direction
//! resets both connections. A direction whose first splice fails with
//! `EINVAL` (a socket type the kernel cannot splice) copies through a
//! buffer instead. Pipes are pooled: a connection holds one only while
//! a chunk is in flight.

use crate::tally::{self, Tally};
use nix::fcntl::{FcntlArg, OFlag, SpliceFFlags, fcntl, splice};
use nix::sys::socket::{Shutdown, shutdown};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, PoisonError};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// The pipe size asked for (the kernel's default is 64 KiB).
const PIPE_SIZE: i32 = 256 * 1024;
/// The fallback copy's buffer.
const COPY_BUFFER: usize = 16 * 1024;

/// Copies both ways until both ends closed their sending side, or until
/// an error (then both connections are reset).
pub(crate) async fn both_ways(client: &TcpStream, endpoint: &TcpStream, tally: &Tally) -> io::Result<()> {
    let copied = tokio::try_join!(one_way(client, endpoint, &tally.bytes_in), one_way(endpoint, client, &tally.bytes_out));
    if copied.is_err() {
        let _ = client.set_zero_linger();
        let _ = endpoint.set_zero_linger();
    }
    copied.map(|_| ())
}

/// Copies `src` to `dst` until `src`'s end of stream, then half-closes `dst`.
async fn one_way(src: &TcpStream, dst: &TcpStream, counter: &AtomicU64) -> io::Result<()> {
    match spliced(src, dst, counter).await {
        Err(Spliced::Unsupported) => buffered(src, dst, counter).await?,
        Err(Spliced::Io(err)) => return Err(err),
        Ok(()) => {}
    }
    match shutdown(dst.as_raw_fd(), Shutdown::Write) {
        Ok(()) | Err(nix::errno::Errno::ENOTCONN) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

enum Spliced {
    /// The kernel cannot splice these sockets (nothing was copied).
    Unsupported,
    Io(io::Error),
}

impl From<io::Error> for Spliced {
    fn from(err: io::Error) -> Self {
        Self::Io(err)
    }
}

/// The splice loop: fill an empty pipe from `src`, drain it into `dst`.
/// The pipe comes from the shared pool for each chunk and goes back once
/// empty, so an idle connection holds no pipe (two descriptors, not six).
async fn spliced(src: &TcpStream, dst: &TcpStream, counter: &AtomicU64) -> Result<(), Spliced> {
    let flags = SpliceFFlags::SPLICE_F_MOVE | SpliceFFlags::SPLICE_F_NONBLOCK;
    let mut moved = false;
    loop {
        src.readable().await?;
        let pipe = Pipe::take()?;
        let filled = src.try_io(Interest::READABLE, || Ok(splice(src, None, &pipe.write, None, pipe.size, flags)?));
        let mut left = match filled {
            Ok(0) => {
                pipe.give_back();
                return Ok(());
            }
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                pipe.give_back();
                continue;
            }
            Err(err) if err.raw_os_error() == Some(libc_einval()) && !moved => return Err(Spliced::Unsupported),
            Err(err) => return Err(err.into()),
        };
        moved = true;
        while left > 0 {
            dst.writable().await?;
            match dst.try_io(Interest::WRITABLE, || Ok(splice(&pipe.read, None, dst, None, left, flags)?)) {
                Ok(n) => {
                    left -= n;
                    tally::add(counter, n);
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                // The pipe still holds bytes: it is dropped, not pooled.
                Err(err) => return Err(err.into()),
            }
        }
        pipe.give_back();
    }
}

fn libc_einval() -> i32 {
    nix::errno::Errno::EINVAL as i32
}

/// Empty pipes kept for the next chunk of any connection.
static POOL: Mutex<Vec<Pipe>> = Mutex::new(Vec::new());
/// Most pipes pooled (the rest are closed when given back).
const POOL_MAX: usize = 256;

/// A pipe for splicing: non-blocking, grown to [`PIPE_SIZE`] when allowed.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    size: usize,
}

impl Pipe {
    /// A pooled pipe, or a new one.
    fn take() -> io::Result<Self> {
        if let Some(pipe) = POOL.lock().unwrap_or_else(PoisonError::into_inner).pop() {
            return Ok(pipe);
        }
        let (read, write) = nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)?;
        let size = fcntl(write.as_raw_fd(), FcntlArg::F_SETPIPE_SZ(PIPE_SIZE))
            .or_else(|_| fcntl(write.as_raw_fd(), FcntlArg::F_GETPIPE_SZ))
            .ok()
            .and_then(|size| usize::try_from(size).ok())
            .unwrap_or(64 * 1024);
        Ok(Self { read, write, size })
    }

    /// Back to the pool; only an empty pipe may be given back.
    fn give_back(self) {
        let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < POOL_MAX {
            pool.push(self);
        }
    }
}

/// The copy through a buffer, for sockets the kernel cannot splice.
async fn buffered(src: &TcpStream, dst: &TcpStream, counter: &AtomicU64) -> io::Result<()> {
    let mut buffer = vec![0u8; COPY_BUFFER];
    loop {
        src.readable().await?;
        let n = match src.try_read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => continue,
            Err(err) => return Err(err),
        };
        let mut sent = 0;
        while sent < n {
            dst.writable().await?;
            match dst.try_write(&buffer[sent..n]) {
                Ok(m) => sent += m,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                Err(err) => return Err(err),
            }
        }
        tally::add(counter, n);
    }
}

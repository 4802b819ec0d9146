//! Byte copying between a client's and an endpoint's TCP connections,
//! zero-copy through a pipe with `splice(2)` (socket → pipe → socket, the
//! bytes never enter user space). A direction's end of stream is passed on
//! as a half-close (`shutdown(SHUT_WR)`); an error in either direction
//! resets both connections. A direction whose first splice fails with
//! `EINVAL` (a socket type the kernel cannot splice) copies through a
//! buffer instead.

use crate::tally::{self, Tally};
use nix::fcntl::{FcntlArg, OFlag, SpliceFFlags, fcntl, splice};
use nix::sys::socket::{Shutdown, shutdown};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::AtomicU64;
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

/// The splice loop: fill the (empty) pipe from `src`, drain it into `dst`.
/// The pipe is made on the first readiness, so idle connections hold none.
async fn spliced(src: &TcpStream, dst: &TcpStream, counter: &AtomicU64) -> Result<(), Spliced> {
    src.readable().await?;
    let (pipe_out, pipe_in) = nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC).map_err(io::Error::from)?;
    let chunk = pipe_size(&pipe_in);
    let flags = SpliceFFlags::SPLICE_F_MOVE | SpliceFFlags::SPLICE_F_NONBLOCK;
    let mut moved = false;
    loop {
        src.readable().await?;
        let filled = src.try_io(Interest::READABLE, || Ok(splice(src, None, &pipe_in, None, chunk, flags)?));
        let mut left = match filled {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => continue,
            Err(err) if err.raw_os_error() == Some(libc_einval()) && !moved => return Err(Spliced::Unsupported),
            Err(err) => return Err(err.into()),
        };
        moved = true;
        while left > 0 {
            dst.writable().await?;
            match dst.try_io(Interest::WRITABLE, || Ok(splice(&pipe_out, None, dst, None, left, flags)?)) {
                Ok(n) => {
                    left -= n;
                    tally::add(counter, n);
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                Err(err) => return Err(err.into()),
            }
        }
    }
}

fn libc_einval() -> i32 {
    nix::errno::Errno::EINVAL as i32
}

/// Grows the pipe to [`PIPE_SIZE`] when allowed; its size either way.
fn pipe_size(pipe: &OwnedFd) -> usize {
    let size = fcntl(pipe.as_raw_fd(), FcntlArg::F_SETPIPE_SZ(PIPE_SIZE))
        .or_else(|_| fcntl(pipe.as_raw_fd(), FcntlArg::F_GETPIPE_SZ))
        .unwrap_or(64 * 1024);
    usize::try_from(size).unwrap_or(64 * 1024)
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

//! UDP listeners (upstream userspace proxier's `udpProxySocket`): one
//! socket per listener; each client address gets a session, a UDP socket
//! connected to the endpoint chosen for it, whose replies go back to the
//! client from the listener's socket. A session ends after the idle
//! timeout without datagrams either way, or when the endpoint answers with
//! an error (ICMP unreachable): the client's next datagram opens a new one.
//! Sessions end with their listener (the socket they answer from closes).

use crate::shared::{DIAL_TIMEOUTS, Shared};
use crate::tally;
use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::Interest;
use tokio::net::UdpSocket;
use tokio::task::JoinSet;

/// How long a datagram may wait for its session's socket to take it.
const SEND_WAIT: Duration = Duration::from_millis(20);

/// The largest datagram carried.
const MAX_DATAGRAM: usize = 65536;

thread_local! {
    /// Replies are read and sent back without awaiting in between, so each
    /// worker thread needs one buffer, not each session.
    static REPLY_BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0; MAX_DATAGRAM]);
}

/// One client's session.
struct Session {
    /// Connected to the endpoint.
    socket: UdpSocket,
    born: Instant,
    /// Nanoseconds after `born` of the last datagram either way.
    last: AtomicU64,
    closed: AtomicBool,
}

impl Session {
    fn touch(&self) {
        let since = u64::try_from(self.born.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last.store(since, Ordering::Relaxed);
    }

    /// When the session goes idle if no datagram comes.
    fn deadline(&self, idle: Duration) -> Instant {
        self.born + Duration::from_nanos(self.last.load(Ordering::Relaxed)) + idle
    }
}

/// Receives client datagrams until the task is aborted (the listener closed).
pub(crate) async fn serve(socket: UdpSocket, shared: Arc<Shared>, idle: Duration) {
    let socket = Arc::new(socket);
    let mut sessions: HashMap<SocketAddr, Arc<Session>> = HashMap::new();
    let mut tasks: JoinSet<SocketAddr> = JoinSet::new();
    let mut buffer = vec![0u8; MAX_DATAGRAM];
    loop {
        tokio::select! {
            received = socket.recv_from(&mut buffer) => match received {
                Ok((n, client)) => {
                    let session = match sessions.get(&client) {
                        Some(session) if !session.closed.load(Ordering::Relaxed) => Arc::clone(session),
                        _ => {
                            let Some(session) = open(&shared, client).await else { continue };
                            let session = Arc::new(session);
                            sessions.insert(client, Arc::clone(&session));
                            tasks.spawn(relay(Arc::clone(&session), Arc::clone(&socket), client, Arc::clone(&shared), idle));
                            session
                        }
                    };
                    session.touch();
                    send(&session.socket, &buffer[..n], &shared, client).await;
                }
                Err(err) => tracing::debug!(listener = %shared.name, %err, "receive failed"),
            },
            Some(Ok(client)) = tasks.join_next() => {
                if sessions.get(&client).is_some_and(|session| session.closed.load(Ordering::Relaxed)) {
                    sessions.remove(&client);
                }
            }
        }
    }
}

/// Sends a client's datagram to its endpoint; dropped when the socket's
/// buffer stays full for [`SEND_WAIT`] (a new socket's first send also waits
/// for the reactor to see it writable).
async fn send(socket: &UdpSocket, datagram: &[u8], shared: &Shared, client: SocketAddr) {
    match tokio::time::timeout(SEND_WAIT, socket.send(datagram)).await {
        Ok(Ok(sent)) => tally::add(&shared.tally.bytes_in, sent),
        Ok(Err(err)) => tracing::debug!(listener = %shared.name, %client, %err, "datagram to the endpoint dropped"),
        Err(_) => tracing::debug!(listener = %shared.name, %client, "endpoint socket full; datagram dropped"),
    }
}

/// A session for `client`: a socket connected to the next endpoint (the
/// one after, when connecting fails). `None`: no endpoint (dropped).
async fn open(shared: &Shared, client: SocketAddr) -> Option<Session> {
    let mut reset = false;
    for _ in DIAL_TIMEOUTS {
        let Some(endpoint) = shared.next_endpoint(client.ip(), reset) else { break };
        match connect(endpoint).await {
            Ok(socket) => {
                return Some(Session { socket, born: Instant::now(), last: AtomicU64::new(0), closed: AtomicBool::new(false) });
            }
            Err(err) => tracing::debug!(listener = %shared.name, %endpoint, %err, "connect failed; trying the next endpoint"),
        }
        reset = true;
    }
    shared.tally.fail();
    tracing::debug!(listener = %shared.name, %client, "no endpoint for the datagram; dropped");
    None
}

async fn connect(endpoint: SocketAddr) -> io::Result<UdpSocket> {
    let any: SocketAddr =
        if endpoint.is_ipv4() { (Ipv4Addr::UNSPECIFIED, 0).into() } else { (Ipv6Addr::UNSPECIFIED, 0).into() };
    let socket = UdpSocket::bind(any).await?;
    socket.connect(endpoint).await?;
    Ok(socket)
}

/// Sends the endpoint's replies to `client` until the session is idle for
/// `idle` or the endpoint answers with an error; returns `client`.
async fn relay(session: Arc<Session>, listener: Arc<UdpSocket>, client: SocketAddr, shared: Arc<Shared>, idle: Duration) -> SocketAddr {
    let _active = shared.tally.open();
    loop {
        let deadline = tokio::time::Instant::from_std(session.deadline(idle));
        tokio::select! {
            // An ICMP error (port unreachable) is readiness ERROR only, not
            // READABLE: it is taken (SO_ERROR) and ends the session.
            ready = session.socket.ready(Interest::READABLE | Interest::ERROR) => match ready {
                Ok(ready) if ready.is_error() => {
                    let err = session.socket.take_error().ok().flatten();
                    tracing::debug!(listener = %shared.name, %client, ?err, "endpoint error; session closed");
                    break;
                }
                Ok(_) if relay_ready(&session, &listener, client, &shared) => {}
                _ => break,
            },
            () = tokio::time::sleep_until(deadline) => {
                if session.deadline(idle) <= Instant::now() {
                    break;
                }
            }
        }
    }
    session.closed.store(true, Ordering::Relaxed);
    client
}

/// Sends every reply waiting; false when the session must end.
fn relay_ready(session: &Session, listener: &UdpSocket, client: SocketAddr, shared: &Shared) -> bool {
    REPLY_BUFFER.with_borrow_mut(|buffer| {
        loop {
            match session.socket.try_recv(buffer) {
                Ok(n) => {
                    session.touch();
                    match listener.try_send_to(&buffer[..n], client) {
                        Ok(sent) => tally::add(&shared.tally.bytes_out, sent),
                        Err(err) => tracing::debug!(listener = %shared.name, %client, %err, "reply dropped"),
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return true,
                Err(err) => {
                    tracing::debug!(listener = %shared.name, %client, %err, "endpoint error; session closed");
                    return false;
                }
            }
        }
    })
}

/// A UDP socket bound to `addr`.
pub(crate) fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
    let socket = std::net::UdpSocket::bind(addr)?;
    socket.set_nonblocking(true)?;
    UdpSocket::from_std(socket)
}

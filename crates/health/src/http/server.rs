//! Listening and serving: one accept loop per listener, one hyper HTTP/1
//! connection task per client, all torn down when the loop is dropped.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::http::request::Parts;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// Answers one request from its head (no server here reads bodies).
pub(crate) type Respond = Arc<dyn Fn(&Parts) -> Response<Full<Bytes>> + Send + Sync>;

/// Go's fallback listen backlog when `somaxconn` cannot be read.
const DEFAULT_BACKLOG: i32 = 4096;

/// A server whose socket is already listening, so callers learn its
/// address (port 0 in tests) and bind errors before serving starts.
pub struct BoundServer {
    listener: TcpListener,
    respond: Respond,
}

impl BoundServer {
    pub(crate) fn new(listener: TcpListener, respond: Respond) -> Self {
        Self { listener, respond }
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        // A bound socket always has a local address; fall back to the
        // unspecified one rather than failing for an impossible case.
        self.listener.local_addr().unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// Serves until the future is dropped (which closes the listener and
    /// every open connection, like Go's `http.Server.Close`).
    pub async fn serve(self) {
        serve_listener(self.listener, self.respond).await;
    }

    /// Serves on a new task; aborting the handle stops the server.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.serve())
    }
}

impl std::fmt::Debug for BoundServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundServer").field("local_addr", &self.local_addr()).finish_non_exhaustive()
    }
}

/// Binds `addr` as Go's `net.Listen` does for that family ("tcp4" /
/// "tcp6"): `SO_REUSEADDR`, backlog `somaxconn`, and an IPv6 socket only
/// for IPv6 (so `0.0.0.0:p` and `[::]:p` can both be bound, as upstream's
/// per-family proxiers do).
pub(crate) fn bind_listener(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(listen_backlog())?;
    TcpListener::from_std(socket.into())
}

fn listen_backlog() -> i32 {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .map(|n| n.min(i32::from(u16::MAX)))
        .unwrap_or(DEFAULT_BACKLOG)
}

async fn serve_listener(listener: TcpListener, respond: Respond) {
    let mut connections = JoinSet::new();
    let mut backoff = Duration::from_millis(5);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    backoff = Duration::from_millis(5);
                    connections.spawn(serve_connection(stream, respond.clone()));
                }
                Err(error) => {
                    // Like Go's Serve: back off on accept errors (EMFILE...).
                    tracing::warn!(%error, retry_in = ?backoff, "accept failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn serve_connection(stream: TcpStream, respond: Respond) {
    let service = service_fn(move |request: Request<Incoming>| {
        let (parts, _body) = request.into_parts();
        let response = respond(&parts);
        async move { Ok::<_, Infallible>(response) }
    });
    let result = http1::Builder::new()
        .title_case_headers(true)
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
    if let Err(error) = result {
        tracing::debug!(%error, "health/metrics connection ended with an error");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::bind_listener;
    use std::net::SocketAddr;

    #[tokio::test]
    async fn ipv4_and_ipv6_wildcards_share_a_port_like_go_tcp4_tcp6() {
        let v4 = bind_listener("0.0.0.0:0".parse().unwrap()).unwrap();
        let port = v4.local_addr().unwrap().port();
        let v6 = bind_listener(SocketAddr::new("::".parse().unwrap(), port)).unwrap();
        assert_eq!(v6.local_addr().unwrap().port(), port);
        let again = bind_listener(SocketAddr::new("0.0.0.0".parse().unwrap(), port));
        assert_eq!(again.unwrap_err().kind(), std::io::ErrorKind::AddrInUse);
    }
}

//! TCP listeners: an accept loop per listener, a task per connection that
//! connects to an endpoint (the next one when it refuses or times out) and
//! then splices bytes both ways. No endpoint: the client is reset.

use crate::shared::{DIAL_TIMEOUTS, Shared};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// The listen backlog of a proxy port.
pub(crate) const BACKLOG: u32 = 4096;

/// Accepts until the task is aborted (the listener closed); connections
/// run in their own tasks and outlive it.
pub(crate) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((client, peer)) => {
                tokio::spawn(connection(client, peer, Arc::clone(&shared)));
            }
            Err(err) => {
                // Out of descriptors (EMFILE/ENFILE) or a connection gone
                // before accept: back off briefly rather than spin.
                tracing::warn!(listener = %shared.name, %err, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn connection(client: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    let _active = shared.tally.open();
    let Some(endpoint) = dial(&shared, peer).await else {
        shared.tally.fail();
        tracing::debug!(listener = %shared.name, %peer, "no endpoint took the connection; resetting the client");
        let _ = client.set_zero_linger();
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = endpoint.set_nodelay(true);
    if let Err(err) = crate::splice::both_ways(&client, &endpoint, &shared.tally).await {
        tracing::debug!(listener = %shared.name, %peer, %err, "connection ended with an error");
    }
}

/// Connects to the chosen endpoint, moving on to the next one (affinity
/// reset) after a refusal or a timeout, as upstream's `TryConnectEndpoints`.
async fn dial(shared: &Shared, peer: SocketAddr) -> Option<TcpStream> {
    let mut reset = false;
    for timeout in DIAL_TIMEOUTS {
        let endpoint = shared.next_endpoint(peer.ip(), reset)?;
        match tokio::time::timeout(timeout, TcpStream::connect(endpoint)).await {
            Ok(Ok(stream)) => return Some(stream),
            Ok(Err(err)) => tracing::debug!(listener = %shared.name, %endpoint, %err, "connect failed; trying the next endpoint"),
            Err(_) => tracing::debug!(listener = %shared.name, %endpoint, ?timeout, "connect timed out; trying the next endpoint"),
        }
        reset = true;
    }
    None
}

/// A listening socket on `addr` (address reuse on, as Go's listeners).
pub(crate) fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

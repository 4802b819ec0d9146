//! The echo server of one pod: one blocking thread per listening socket,
//! sockets bound inside the pod's namespace, stopped on drop.

use super::Answer;
use crate::netns::Netns;
use anyhow::{Context, Result};
use socket2::SockRef;
use std::io::Write;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a UDP thread blocks before it looks at the stop flag again
/// (a fallback: dropping the server also wakes it at once).
const UDP_POLL: Duration = Duration::from_millis(250);
/// How long a dropped server waits for its threads before leaving them.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// A running echo server; dropping it closes its sockets and ends its threads.
#[derive(Debug)]
pub struct EchoServer {
    name: String,
    stop: Arc<AtomicBool>,
    tcp: Vec<TcpListener>,
    udp: Vec<UdpSocket>,
    threads: Vec<JoinHandle<()>>,
}

impl EchoServer {
    /// Starts answering as `name` on `ip` (an address of `ns`): TCP on each
    /// of `tcp_ports`, UDP on each of `udp_ports`. Fails if a port cannot be
    /// bound in the namespace.
    pub fn start(ns: &Netns, name: &str, ip: IpAddr, tcp_ports: &[u16], udp_ports: &[u16]) -> Result<Self> {
        let (tcp, udp) = bind_in(ns, ip, tcp_ports.to_vec(), udp_ports.to_vec())
            .with_context(|| format!("echo server {name} on {ip} in {}", ns.name()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        let mut server = Self { name: name.to_string(), stop, tcp: Vec::new(), udp: Vec::new(), threads: Vec::new() };
        for listener in tcp {
            let serving = listener.try_clone().context("clone TCP listener")?;
            threads.push(spawn_tcp(serving, name.to_string(), Arc::clone(&server.stop))?);
            server.tcp.push(listener);
        }
        for socket in udp {
            socket.set_read_timeout(Some(UDP_POLL)).context("UDP read timeout")?;
            let serving = socket.try_clone().context("clone UDP socket")?;
            threads.push(spawn_udp(serving, name.to_string(), Arc::clone(&server.stop))?);
            server.udp.push(socket);
        }
        server.threads = threads;
        Ok(server)
    }

    /// The name this server answers with.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // shutdown() wakes a thread blocked in accept()/recv() at once.
        for listener in &self.tcp {
            let _ = SockRef::from(listener).shutdown(Shutdown::Both);
        }
        for socket in &self.udp {
            let _ = SockRef::from(socket).shutdown(Shutdown::Both);
        }
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline && self.threads.iter().any(|t| !t.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        for thread in self.threads.drain(..) {
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

/// Binds every socket on a thread inside `ns`, so the sockets belong to it.
fn bind_in(ns: &Netns, ip: IpAddr, tcp_ports: Vec<u16>, udp_ports: Vec<u16>) -> Result<(Vec<TcpListener>, Vec<UdpSocket>)> {
    ns.run(move || -> Result<(Vec<TcpListener>, Vec<UdpSocket>)> {
        let tcp = tcp_ports
            .iter()
            .map(|&port| TcpListener::bind((ip, port)).with_context(|| format!("bind tcp {ip}:{port}")))
            .collect::<Result<Vec<_>>>()?;
        let udp = udp_ports
            .iter()
            .map(|&port| UdpSocket::bind((ip, port)).with_context(|| format!("bind udp {ip}:{port}")))
            .collect::<Result<Vec<_>>>()?;
        Ok((tcp, udp))
    })?
}

fn spawn_tcp(listener: TcpListener, name: String, stop: Arc<AtomicBool>) -> Result<JoinHandle<()>> {
    let local = listener.local_addr().context("TCP listener address")?;
    std::thread::Builder::new()
        .name(format!("echo-tcp-{name}-{}", local.port()))
        .spawn(move || serve_tcp(&listener, &name, &stop))
        .context("spawn TCP echo thread")
}

fn spawn_udp(socket: UdpSocket, name: String, stop: Arc<AtomicBool>) -> Result<JoinHandle<()>> {
    let local = socket.local_addr().context("UDP socket address")?;
    std::thread::Builder::new()
        .name(format!("echo-udp-{name}-{}", local.port()))
        .spawn(move || serve_udp(&socket, local, &name, &stop))
        .context("spawn UDP echo thread")
}

/// Answers every accepted connection with one line, then closes it.
fn serve_tcp(listener: &TcpListener, name: &str, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        let Ok((mut stream, peer)) = listener.accept() else { continue };
        let Ok(local) = stream.local_addr() else { continue };
        let line = format!("{}\n", Answer { ep: name.to_string(), local, peer });
        let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
        let _ = stream.write_all(line.as_bytes());
    }
}

/// Answers every datagram with one line, sent back to its source.
fn serve_udp(socket: &UdpSocket, local: SocketAddr, name: &str, stop: &AtomicBool) {
    let mut buf = [0u8; 2048];
    while !stop.load(Ordering::SeqCst) {
        let Ok((_, peer)) = socket.recv_from(&mut buf) else { continue };
        let line = format!("{}\n", Answer { ep: name.to_string(), local, peer });
        let _ = socket.send_to(line.as_bytes(), peer);
    }
}

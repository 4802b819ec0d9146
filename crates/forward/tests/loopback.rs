//! The data path on 127.0.0.1: endpoint choice, retries, UDP sessions,
//! listeners kept across applies, half-close and bulk bytes through splice.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use forward::{Counters, Forwarder, ForwarderOptions, Listener, ListenerKey, PortRange, Role};
use model::{Protocol, ServicePortName};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};

fn options() -> ForwarderOptions {
    ForwarderOptions { port_range: None, udp_idle_timeout: Duration::from_millis(250) }
}

fn key(name: &str, protocol: Protocol) -> ListenerKey {
    ListenerKey { service_port: ServicePortName::new("ns", name, "p", protocol), role: Role::ProxyPort }
}

fn listener(name: &str, protocol: Protocol, backends: &[SocketAddr]) -> Listener {
    Listener { key: key(name, protocol), bind: ([127, 0, 0, 1], 0).into(), backends: backends.to_vec(), affinity: None }
}

/// Applies `wanted`, asserting every listener opened; their addresses in order.
fn apply(forwarder: &Forwarder, wanted: &[Listener]) -> Vec<SocketAddr> {
    let applied = forwarder.apply(wanted);
    assert!(applied.failed.is_empty(), "{:?}", applied.failed);
    wanted.iter().map(|w| applied.bound.iter().find(|b| b.key == w.key).unwrap().addr).collect()
}

fn counters(forwarder: &Forwarder, name: &str, protocol: Protocol) -> Counters {
    forwarder.counters().into_iter().find(|(k, _)| *k == key(name, protocol)).unwrap().1
}

/// A TCP endpoint that sends its `id` on each connection, then echoes.
async fn named_endpoint(id: u8) -> SocketAddr {
    let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = server.accept().await {
            tokio::spawn(async move {
                conn.write_all(&[id]).await.ok();
                let (mut r, mut w) = conn.split();
                tokio::io::copy(&mut r, &mut w).await.ok();
            });
        }
    });
    addr
}

/// An address where nothing listens (connections are refused).
async fn refusing() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap()
}

async fn endpoint_id(addr: SocketAddr) -> u8 {
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.read_u8().await.unwrap()
}

async fn ids(addr: SocketAddr, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(endpoint_id(addr).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_round_robin_in_the_given_order() {
    let backends = [named_endpoint(1).await, named_endpoint(2).await, named_endpoint(3).await];
    let forwarder = Forwarder::new(options());
    let [addr] = apply(&forwarder, &[listener("rr", Protocol::Tcp, &backends)])[..] else { panic!() };
    assert_eq!(ids(addr, 6).await, [1, 2, 3, 1, 2, 3]);
    assert_eq!(counters(&forwarder, "rr", Protocol::Tcp).connections, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_ip_affinity_holds_until_its_timeout() {
    let backends = [named_endpoint(1).await, named_endpoint(2).await];
    let forwarder = Forwarder::new(options());
    let mut wanted = listener("sticky", Protocol::Tcp, &backends);
    // Long enough that a loaded CI machine does not stall past it between
    // two connections.
    wanted.affinity = Some(Duration::from_millis(1000));
    let [addr] = apply(&forwarder, &[wanted])[..] else { panic!() };
    assert_eq!(ids(addr, 4).await, [1, 1, 1, 1]);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(ids(addr, 2).await, [2, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_endpoint_is_passed_over() {
    let backends = [refusing().await, named_endpoint(7).await];
    let forwarder = Forwarder::new(options());
    let [addr] = apply(&forwarder, &[listener("retry", Protocol::Tcp, &backends)])[..] else { panic!() };
    assert_eq!(ids(addr, 4).await, [7, 7, 7, 7]);
    let counted = counters(&forwarder, "retry", Protocol::Tcp);
    assert_eq!((counted.connections, counted.failed), (4, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_endpoint_resets_the_client() {
    let forwarder = Forwarder::new(options());
    let none = listener("none", Protocol::Tcp, &[]);
    let all_refuse = listener("refused", Protocol::Tcp, &[refusing().await, refusing().await]);
    let addrs = apply(&forwarder, &[none, all_refuse]);
    for addr in addrs {
        // The reset may come before the connect is seen complete.
        let read = match TcpStream::connect(addr).await {
            Ok(mut conn) => conn.read_u8().await.map_err(|e| e.kind()),
            Err(err) => Err(err.kind()),
        };
        assert_eq!(read, Err(std::io::ErrorKind::ConnectionReset), "{addr}");
    }
    assert_eq!(counters(&forwarder, "none", Protocol::Tcp).failed, 1);
    assert_eq!(counters(&forwarder, "refused", Protocol::Tcp).failed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_listener_keeps_its_port_and_connections_outlive_removal() {
    let (one, two) = (named_endpoint(1).await, named_endpoint(2).await);
    let forwarder = Forwarder::new(options());
    let [addr] = apply(&forwarder, &[listener("kept", Protocol::Tcp, &[one])])[..] else { panic!() };
    let mut established = TcpStream::connect(addr).await.unwrap();
    assert_eq!(established.read_u8().await.unwrap(), 1);
    assert_eq!(apply(&forwarder, &[listener("kept", Protocol::Tcp, &[two])]), [addr]);
    assert_eq!(ids(addr, 2).await, [2, 2]);

    assert!(forwarder.apply(&[]).bound.is_empty());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(TcpStream::connect(addr).await.is_err(), "a removed listener still accepts");
    established.write_all(b"still here").await.unwrap();
    let mut echoed = [0u8; 10];
    established.read_exact(&mut echoed).await.unwrap();
    assert_eq!(&echoed, b"still here");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_freed_address_is_handed_to_the_key_that_asks_for_it() {
    let forwarder = Forwarder::new(options());
    let [addr] = apply(&forwarder, &[listener("old", Protocol::Tcp, &[named_endpoint(1).await])])[..] else { panic!() };
    let mut renamed = listener("new", Protocol::Tcp, &[named_endpoint(2).await]);
    renamed.bind = addr;
    assert_eq!(apply(&forwarder, &[renamed]), [addr]);
    assert_eq!(ids(addr, 1).await, [2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_close_reaches_the_endpoint_and_its_answer_comes_back() {
    // The endpoint reads to end of stream, then answers with the count.
    let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = server.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut conn, _) = server.accept().await.unwrap();
        let mut got = Vec::new();
        conn.read_to_end(&mut got).await.unwrap();
        conn.write_all(format!("got {}", got.len()).as_bytes()).await.unwrap();
    });
    let forwarder = Forwarder::new(options());
    let [addr] = apply(&forwarder, &[listener("half", Protocol::Tcp, &[endpoint])])[..] else { panic!() };
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(&[0u8; 3000]).await.unwrap();
    conn.shutdown().await.unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.unwrap();
    assert_eq!(answer, "got 3000");
    let counted = counters(&forwarder, "half", Protocol::Tcp);
    assert_eq!((counted.bytes_in, counted.bytes_out), (3000, 8));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_megabytes_both_ways_intact() {
    const SIZE: usize = 16 << 20;
    let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = server.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut conn, _) = server.accept().await.unwrap();
        let (mut r, mut w) = conn.split();
        tokio::io::copy(&mut r, &mut w).await.unwrap();
    });
    let forwarder = Forwarder::new(options());
    let [addr] = apply(&forwarder, &[listener("bulk", Protocol::Tcp, &[endpoint])])[..] else { panic!() };
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let data: Vec<u8> = (0..SIZE / 8)
        .flat_map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()
        })
        .collect();
    let (mut r, mut w) = TcpStream::connect(addr).await.unwrap().into_split();
    let sent = data.clone();
    let writer = tokio::spawn(async move {
        w.write_all(&sent).await.unwrap();
        w.shutdown().await.unwrap();
    });
    let mut echoed = Vec::with_capacity(SIZE);
    r.read_to_end(&mut echoed).await.unwrap();
    writer.await.unwrap();
    assert_eq!(echoed.len(), SIZE);
    assert!(echoed == data, "the bytes came back changed");
    let counted = counters(&forwarder, "bulk", Protocol::Tcp);
    assert_eq!((counted.bytes_in, counted.bytes_out), (SIZE as u64, SIZE as u64));
}

/// A UDP endpoint answering each datagram with its `id` then the datagram.
async fn udp_endpoint(id: u8) -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    tokio::spawn(async move {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = socket.recv_from(&mut buf[1..]).await {
            buf[0] = id;
            socket.send_to(&buf[..=n], from).await.ok();
        }
    });
    addr
}

async fn ask(client: &UdpSocket, addr: SocketAddr, payload: &[u8]) -> Vec<u8> {
    client.send_to(payload, addr).await.unwrap();
    let mut buf = [0u8; 2048];
    let (n, from) = tokio::time::timeout(Duration::from_secs(2), client.recv_from(&mut buf)).await.unwrap().unwrap();
    assert_eq!(from, addr, "the reply must come from the listener's address");
    buf[..n].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_sessions_per_client_closed_when_idle() {
    let backends = [udp_endpoint(1).await, udp_endpoint(2).await];
    // Idle sessions close after 600 ms (upstream's default is 250 ms): room
    // for a loaded machine between the datagrams of one session.
    let forwarder = Forwarder::new(ForwarderOptions { udp_idle_timeout: Duration::from_millis(600), ..options() });
    let [addr] = apply(&forwarder, &[listener("dns", Protocol::Udp, &backends)])[..] else { panic!() };
    let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    assert_eq!(ask(&a, addr, b"a1").await, b"\x01a1");
    assert_eq!(ask(&b, addr, b"b1").await, b"\x02b1");
    assert_eq!(ask(&a, addr, b"a2").await, b"\x01a2", "a client keeps its session's endpoint");
    let open = counters(&forwarder, "dns", Protocol::Udp);
    assert_eq!((open.connections, open.active, open.bytes_in, open.bytes_out), (2, 2, 6, 9));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(counters(&forwarder, "dns", Protocol::Udp).active, 0, "idle sessions are closed");
    ask(&a, addr, b"a3").await;
    assert_eq!(counters(&forwarder, "dns", Protocol::Udp).connections, 3, "a new session after the idle close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_zero_takes_the_first_free_port_of_the_range() {
    // A port held by someone else starts the range, below the ephemeral
    // ports (other tests' sockets) and free when probed.
    let free = |port: u16| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok();
    let first = (20000..30000).step_by(10).find(|&p| (p..p + 4).all(free)).expect("no free ports in 20000-30000");
    let _foreign = std::net::TcpListener::bind(("127.0.0.1", first)).unwrap();
    let range = PortRange { first, last: first + 3 };
    let forwarder = Forwarder::new(ForwarderOptions { port_range: Some(range), ..options() });
    let wanted = [listener("a", Protocol::Tcp, &[]), listener("b", Protocol::Tcp, &[]), listener("c", Protocol::Udp, &[])];
    let ports: Vec<u16> = apply(&forwarder, &wanted).iter().map(SocketAddr::port).collect();
    assert_eq!(ports, [first + 1, first + 2, first], "TCP skips the foreign port; UDP's ports are its own");

    let single = Forwarder::new(ForwarderOptions { port_range: Some(PortRange { first, last: first }), ..options() });
    let failed = single.apply(&[listener("x", Protocol::Tcp, &[])]).failed;
    assert!(matches!(failed[..], [(_, forward::Error::RangeExhausted(r))] if r.first == first), "{failed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_udp_endpoint_that_answers_unreachable_ends_the_session() {
    // Nothing listens on the first endpoint: its ICMP port unreachable ends
    // the session, and the client's next datagram opens one on the next.
    let closed = UdpSocket::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let backends = [closed, udp_endpoint(2).await];
    let forwarder = Forwarder::new(options());
    let [addr] = apply(&forwarder, &[listener("icmp", Protocol::Udp, &backends)])[..] else { panic!() };
    let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    client.send_to(b"lost", addr).await.unwrap();
    let mut buf = [0u8; 64];
    let lost = tokio::time::timeout(Duration::from_millis(200), client.recv_from(&mut buf)).await;
    assert!(lost.is_err(), "an answer from a closed port: {lost:?}");
    assert_eq!(counters(&forwarder, "icmp", Protocol::Udp).active, 0, "the refused session is still open");
    assert_eq!(ask(&client, addr, b"again").await, b"\x02again");
}

//! `--userspace-localhost-nodeports` on a real kernel (shared by the
//! iptables and nftables mode suites): a NodePort service whose endpoint
//! (TCP and UDP) lives on a link of the namespace; `127.0.0.1:<nodePort>`
//! must answer through the proxy's listener with
//! `net.ipv4.conf.all.route_localnet` at 0.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use testkit::netns::Netns;

/// The flag under test.
pub const FLAG: &str = "--userspace-localhost-nodeports";
const TCP: &str = "127.0.0.1:30080";
const UDP: &str = "127.0.0.1:30053";
const TCP_REPLY: &str = "tcp endpoint 10.244.1.10";

const MANIFESTS: &str = "\
apiVersion: v1
kind: Node
metadata:
  name: node-a
status:
  addresses:
  - address: 192.168.86.2
    type: InternalIP
---
apiVersion: v1
kind: Service
metadata:
  name: echo
  namespace: default
spec:
  type: NodePort
  clusterIP: 10.96.0.80
  clusterIPs: [10.96.0.80]
  ipFamilies: [IPv4]
  ports:
  - {name: tcp, port: 80, protocol: TCP, targetPort: 8080, nodePort: 30080}
  - {name: udp, port: 53, protocol: UDP, targetPort: 8053, nodePort: 30053}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo-1
  namespace: default
  labels:
    kubernetes.io/service-name: echo
addressType: IPv4
endpoints:
- addresses: [10.244.1.10]
  conditions: {ready: true, serving: true, terminating: false}
  nodeName: node-b
ports:
- {name: tcp, port: 8080, protocol: TCP}
- {name: udp, port: 8053, protocol: UDP}
";

/// Links, addresses and the endpoint's servers in `ns`; the manifests
/// file written in `dir`.
pub fn prepare(ns: &Netns, dir: &Path) -> PathBuf {
    let links = [
        "link add eth0 type veth peer name peer0",
        "addr add 192.168.86.2/24 dev eth0",
        "addr add 10.244.1.10/32 dev eth0",
        "link set eth0 up",
        "link set peer0 up",
    ];
    ns.ip_batch(&links.map(String::from)).unwrap();
    ns.run(|| {
        let tcp = TcpListener::bind("10.244.1.10:8080").unwrap();
        let udp = UdpSocket::bind("10.244.1.10:8053").unwrap();
        std::thread::spawn(move || {
            for mut conn in tcp.incoming().map_while(Result::ok) {
                let _ = conn.write_all(TCP_REPLY.as_bytes());
            }
        });
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while let Ok((n, from)) = udp.recv_from(&mut buf) {
                let _ = udp.send_to(&[b"udp endpoint: ", &buf[..n]].concat(), from);
            }
        });
    })
    .unwrap();
    let path = dir.join("localhost-nodeports.yaml");
    std::fs::write(&path, MANIFESTS).unwrap();
    path
}

/// `net.ipv4.conf.all.route_localnet` in `ns`.
pub fn route_localnet(ns: &Netns) -> String {
    ns.exec("sysctl", &["-n", "net.ipv4.conf.all.route_localnet"]).unwrap().trim().to_string()
}

/// What `127.0.0.1:<nodePort>` answers, TCP and UDP, or why not.
pub fn ask(ns: &Netns) -> (Result<String, String>, Result<String, String>) {
    ns.run(|| {
        let tcp = (|| {
            let addr: SocketAddr = TCP.parse().map_err(|e| format!("{e}"))?;
            let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).map_err(|e| format!("connect: {e}"))?;
            conn.set_read_timeout(Some(Duration::from_secs(2))).map_err(|e| e.to_string())?;
            let mut reply = String::new();
            conn.read_to_string(&mut reply).map_err(|e| format!("read: {e}"))?;
            Ok(reply)
        })();
        let udp = (|| {
            let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            socket.set_read_timeout(Some(Duration::from_millis(500))).map_err(|e| e.to_string())?;
            socket.send_to(b"ping", UDP).map_err(|e| format!("send: {e}"))?;
            let mut buf = [0u8; 512];
            let (n, from) = socket.recv_from(&mut buf).map_err(|e| format!("receive: {e}"))?;
            if from.to_string() != UDP {
                return Err(format!("reply from {from}"));
            }
            Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
        })();
        (tcp, udp)
    })
    .unwrap()
}

/// Asks until both answer (the listeners open after the first sync).
pub fn assert_answers(ns: &Netns) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (tcp, udp) = ask(ns);
        if tcp.as_deref() == Ok(TCP_REPLY) && udp.as_deref() == Ok("udp endpoint: ping") {
            return;
        }
        assert!(Instant::now() < deadline, "127.0.0.1 NodePorts do not answer: TCP {tcp:?}, UDP {udp:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

//! `kprs-bench datapath`: new TCP connections per second through one
//! ClusterIP, with that one service programmed and with N more beside it,
//! per proxy mode — the first-packet cost of each mode's service lookup.
//!
//! Per mode and service count, three fresh namespaces (deleted at the end):
//!
//! ```text
//!   client (pod)  10.250.0.2 ──veth── 10.250.0.1  node (the proxy)  10.250.1.1 ──veth── 10.250.1.2  server (pod)
//! ```
//!
//! The proxy runs in `node` (forwarding on) on a manifests file with the
//! generated services plus one target service (`zz-datapath/target`,
//! ClusterIP 10.100.0.1:80 → 10.250.1.2:8080). A thread in `server`
//! answers each connection with one byte and closes; a thread in `client`
//! opens connections to the ClusterIP one after another (connect, one byte
//! each way, close with an RST so no TIME_WAIT holds its port), for a
//! bounded time and count per round. Every connection is new to conntrack,
//! so each one's SYN walks the mode's NAT rules (in IPVS mode: the ipset
//! match of `KUBE-SERVICES` and IPVS's own virtual-server lookup).
//!
//! IPVS mode needs a kernel with IPVS and dummy links: `kprs-bench
//! datapath-vm` runs this inside the VM of `scripts/ipvs-vm.sh`.
//!
//! With `--bulk-mib` and `--concurrent`, each case also measures bulk
//! throughput and the proxy's memory with that many connections held open
//! (see [`crate::datapath_load`]); userspace mode (`--modes userspace`)
//! forwards through proxy ports of the proxy process.

use crate::datapath_load;
use crate::generate::{self, Load};
use crate::namespace::BenchNetns;
use crate::proxy_process::ProxyProcess;
use crate::stats::Samples;
use crate::sync_line::{SYNCED_ANY_MODE, own_synced_message};
use anyhow::{Context, Result, bail};
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The target service's ClusterIP (outside the generated 10.96.0.0/12 range
/// for fewer than ~260,000 services).
const CLUSTER_IP: &str = "10.100.0.1";
/// The echo endpoint's address and port.
const SERVER_IP: &str = "10.250.1.2";
const SERVER_PORT: u16 = 8080;
/// Cluster CIDR given to the proxy: the client is inside, so not masqueraded.
const CLUSTER_CIDR: &str = "10.128.0.0/9";

/// How a data-path run is set up.
#[derive(Debug, Clone)]
pub struct DatapathSetup {
    /// `--proxy-mode` values to measure (iptables runs with the legacy backend).
    pub modes: Vec<String>,
    /// Generated services beside the target (0 = the target alone).
    pub service_counts: Vec<usize>,
    /// Endpoints per generated service.
    pub endpoints: usize,
    /// Rounds per case; the figure is their median.
    pub rounds: usize,
    /// Longest round.
    pub round_time: Duration,
    /// Most connections per round.
    pub round_connections: usize,
    /// The kube-proxy-rs binary.
    pub binary: PathBuf,
    /// Longest wait for the proxy's first sync.
    pub cap: Duration,
    /// MiB per bulk round (0: no bulk rounds).
    pub bulk_mib: usize,
    /// Connections held open at once for the memory figure (0: none).
    pub concurrent: usize,
}

/// What one case measured.
#[derive(Debug, Clone)]
pub struct Case {
    /// The proxy mode.
    pub mode: String,
    /// Generated services beside the target.
    pub services: usize,
    /// Proxy start → first sync line.
    pub first_sync: Duration,
    /// Connections per second, one sample per round.
    pub rates: Samples,
    /// Connections that failed over all rounds.
    pub failures: usize,
    /// `/proc/loadavg` (1 min) before the rounds.
    pub load_before: String,
    /// Bulk upload MiB/s, one sample per round.
    pub bulk: Samples,
    /// The proxy's memory with `concurrent` connections open.
    pub held: Option<datapath_load::Held>,
}

/// Runs every case and returns the report.
pub fn run_datapath(setup: &DatapathSetup) -> Result<String> {
    if setup.concurrent > 0 {
        datapath_load::raise_open_files(setup.concurrent)?;
    }
    let mut cases = Vec::new();
    for mode in &setup.modes {
        for &services in &setup.service_counts {
            let case = run_case(setup, mode, services)?;
            eprintln!(
                "{mode}, {services} + 1 services: {} conn/s (rounds: {}), {} failed, load {}",
                case.rates.summary(0),
                case.rates.len(),
                case.failures,
                case.load_before
            );
            cases.push(case);
        }
    }
    Ok(report(setup, &cases))
}

/// The node, client and server namespaces, wired as in the module doc.
struct Topology {
    node: BenchNetns,
    client: BenchNetns,
    server: BenchNetns,
}

fn topology() -> Result<Topology> {
    let topo = Topology {
        node: BenchNetns::labelled("dpnode")?,
        client: BenchNetns::labelled("dpcli")?,
        server: BenchNetns::labelled("dpsrv")?,
    };
    for (pod, link, node_addr, pod_addr) in [
        (&topo.client, "cli", "10.250.0.1/24", "10.250.0.2/24"),
        (&topo.server, "srv", "10.250.1.1/24", "10.250.1.2/24"),
    ] {
        topo.node.ip(&[
            "link",
            "add",
            link,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            pod.name(),
        ])?;
        topo.node.ip(&["addr", "add", node_addr, "dev", link])?;
        topo.node.ip(&["link", "set", link, "up"])?;
        pod.ip(&["addr", "add", pod_addr, "dev", "eth0"])?;
        pod.ip(&["link", "set", "eth0", "up"])?;
        let gateway = node_addr.split('/').next().unwrap_or_default();
        pod.ip(&["route", "add", "default", "via", gateway])?;
    }
    topo.node
        .exec("sysctl", &["-qw", "net.ipv4.ip_forward=1"])?;
    Ok(topo)
}

/// The generated services plus the target service and its one endpoint.
fn manifests(setup: &DatapathSetup, services: usize) -> String {
    let load = Load {
        services,
        endpoints: setup.endpoints,
        local_every: 3,
        nodeport_every: 0,
        lb_every: 0,
        affinity_every: 0,
    };
    let mut text = if services == 0 {
        generate::node_document()
    } else {
        generate::manifests(&load, 0)
    };
    let _ = write!(
        text,
        "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: target\n  namespace: zz-datapath\nspec:\n  \
         type: ClusterIP\n  clusterIP: {CLUSTER_IP}\n  ports:\n  - name: http\n    port: 80\n    protocol: TCP\n    \
         targetPort: {SERVER_PORT}\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  \
         name: target-0\n  namespace: zz-datapath\n  labels:\n    kubernetes.io/service-name: target\n\
         addressType: IPv4\nports:\n- name: http\n  port: {SERVER_PORT}\n  protocol: TCP\nendpoints:\n\
         - addresses: [{SERVER_IP}]\n  nodeName: {other}\n  conditions: {{ready: true}}\n",
        other = generate::OTHER_NODE
    );
    text
}

/// The proxy's flags: every change synced at once, no periodic full sync
/// during the rounds (IPVS mode reads its own period flags).
fn proxy_args(mode: &str, manifests: &str) -> Vec<String> {
    let (min_period, period) = if mode == "ipvs" {
        ("--ipvs-min-sync-period", "--ipvs-sync-period")
    } else {
        ("--iptables-min-sync-period", "--iptables-sync-period")
    };
    [
        "--manifests",
        manifests,
        "--hostname-override",
        generate::NODE,
        "--proxy-mode",
        mode,
        "--iptables-backend",
        "legacy",
        min_period,
        "0s",
        period,
        "1h",
        "--healthz-bind-address",
        "127.0.0.1:10256",
        "--metrics-bind-address",
        "127.0.0.1:10249",
        "--cluster-cidr",
        CLUSTER_CIDR,
    ]
    .map(String::from)
    .into()
}

fn run_case(setup: &DatapathSetup, mode: &str, services: usize) -> Result<Case> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("manifests.yaml");
    std::fs::write(&path, manifests(setup, services))?;
    let topo = topology()?;
    let server = EchoServer::start(&topo.server)?;
    let mut proxy = ProxyProcess::start(
        &topo.node,
        &setup.binary,
        &proxy_args(mode, &path.display().to_string()),
        false,
    )?;
    let started = Instant::now();
    let Some(line) = proxy.wait_for(SYNCED_ANY_MODE, started + setup.cap)? else {
        bail!(
            "{mode}, {services} services: no sync within {} s",
            setup.cap.as_secs()
        );
    };
    if !line.text.contains(own_synced_message(mode)) {
        bail!(
            "{mode}: the proxy synced another mode's rules (IPVS mode falls back to iptables on a kernel \
             without IPVS: run `kprs-bench datapath-vm`): {}",
            line.text
        );
    }
    let first_sync = line.at - started;
    let load_before = load_average();
    let (rates, failures) = measure_rounds(setup, &topo.client)?;
    let target: SocketAddr = format!("{CLUSTER_IP}:80").parse()?;
    let bulk = match setup.bulk_mib {
        0 => Samples::default(),
        mib => datapath_load::bulk_rounds(&topo.client, target, mib, setup.rounds)?,
    };
    let held = match setup.concurrent {
        0 => None,
        n => Some(datapath_load::hold(&topo.client, target, n, &proxy)?),
    };
    proxy.stop(Duration::from_secs(10))?;
    server.stop(&topo.server)?;
    Ok(Case {
        mode: mode.to_string(),
        services,
        first_sync,
        rates,
        failures,
        load_before,
        bulk,
        held,
    })
}

/// One warm-up round, then `setup.rounds` timed rounds.
fn measure_rounds(setup: &DatapathSetup, client: &BenchNetns) -> Result<(Samples, usize)> {
    let target: SocketAddr = format!("{CLUSTER_IP}:80").parse()?;
    let (round_time, max) = (setup.round_time, setup.round_connections);
    let warm = client.run(move || connect_loop(target, Duration::from_millis(300), 200))??;
    if warm.done == 0 {
        bail!(
            "no connection through {target} succeeded in the warm-up ({} failed)",
            warm.failed
        );
    }
    let mut rates = Samples::default();
    let mut failures = 0;
    for _ in 0..setup.rounds {
        let round = client.run(move || connect_loop(target, round_time, max))??;
        rates.push(round.done as f64 / round.elapsed.as_secs_f64());
        failures += round.failed;
    }
    Ok((rates, failures))
}

/// What one round of connections did.
struct Round {
    done: usize,
    failed: usize,
    elapsed: Duration,
}

/// Connections to `target` one after another until `time` passes or `max`
/// are done.
fn connect_loop(target: SocketAddr, time: Duration, max: usize) -> Result<Round> {
    let start = Instant::now();
    let (mut done, mut failed) = (0, 0);
    while done < max && start.elapsed() < time {
        match one_connection(target) {
            Ok(()) => done += 1,
            Err(_) => failed += 1,
        }
        if failed > 100 && done == 0 {
            break;
        }
    }
    Ok(Round {
        done,
        failed,
        elapsed: start.elapsed(),
    })
}

/// Connect, send one byte, read one back, close with an RST.
fn one_connection(target: SocketAddr) -> Result<()> {
    let mut stream = TcpStream::connect_timeout(&target, Duration::from_secs(1))?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    stream.write_all(b"x")?;
    let mut byte = [0u8; 1];
    stream.read_exact(&mut byte)?;
    reset_on_close(&stream)?;
    Ok(())
}

/// `SO_LINGER` with a zero timeout: `close` sends an RST and leaves no
/// TIME_WAIT socket holding the port.
#[allow(unsafe_code)] // one setsockopt; std has no stable `set_linger`
fn reset_on_close(stream: &TcpStream) -> Result<()> {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let size = libc::socklen_t::try_from(std::mem::size_of::<libc::linger>())?;
    // SAFETY: a valid socket descriptor and a pointer to a live `linger` of the given size.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            size,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("SO_LINGER");
    }
    Ok(())
}

/// The endpoint: a thread in the server namespace answering one byte.
struct EchoServer {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl EchoServer {
    fn start(ns: &BenchNetns) -> Result<Self> {
        let addr: SocketAddr = format!("{SERVER_IP}:{SERVER_PORT}").parse()?;
        let listener = ns.run(move || TcpListener::bind(addr))??;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || serve(&listener, &flag));
        Ok(Self { stop, thread })
    }

    /// Sets the stop flag and wakes the accept loop with one connection
    /// from inside the server namespace (local, so no rules in the way).
    fn stop(self, server: &BenchNetns) -> Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        let addr: SocketAddr = format!("{SERVER_IP}:{SERVER_PORT}").parse()?;
        let _ = server.run(move || TcpStream::connect_timeout(&addr, Duration::from_secs(1)))?;
        let _ = self.thread.join();
        Ok(())
    }
}

/// Answers each connection by its first byte: a bulk upload goes to a
/// sink thread, a held connection is echoed and kept until the stop, any
/// other byte is echoed and the connection closed.
fn serve(listener: &TcpListener, stop: &AtomicBool) {
    let mut held = Vec::new();
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut stream) = stream else { continue };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut byte = [0u8; 1];
        if stream.read_exact(&mut byte).is_err() {
            continue;
        }
        if byte[0] == datapath_load::BULK {
            let _ = stream.set_read_timeout(None);
            std::thread::spawn(move || datapath_load::sink(stream));
            continue;
        }
        let _ = stream.write_all(&byte);
        if byte[0] == datapath_load::HOLD {
            held.push(stream);
        }
    }
}

/// The 1-minute load average.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// The Markdown table, each case against its mode's smallest service count.
fn report(setup: &DatapathSetup, cases: &[Case]) -> String {
    let mut out = format!(
        "\nnew TCP connections/s through one ClusterIP ({} round(s) of ≤ {:.1} s / ≤ {} connections, one client \
         thread; generated services have {} endpoint(s); connections/s as min / median / max over the rounds)\n\n\
         | mode | services programmed | first sync (s) | connections/s | vs fewest services | failed | load (1 min) |\n\
         |---|---|---|---|---|---|---|\n",
        setup.rounds,
        setup.round_time.as_secs_f64(),
        setup.round_connections,
        setup.endpoints
    );
    for case in cases {
        let base = cases
            .iter()
            .filter(|c| c.mode == case.mode)
            .min_by_key(|c| c.services);
        let median = |c: &Case| c.rates.min_median_max().map_or(0.0, |(_, m, _)| m);
        let ratio = base.map_or(String::new(), |b| {
            format!("{:+.1} %", (median(case) / median(b) - 1.0) * 100.0)
        });
        let _ = writeln!(
            out,
            "| {} | {} | {:.3} | {} | {ratio} | {} | {} |",
            case.mode,
            case.services + 1,
            case.first_sync.as_secs_f64(),
            case.rates.summary(0),
            case.failures,
            case.load_before
        );
    }
    load_report(setup, cases, &mut out);
    out
}

/// The bulk and held-connection table, when measured.
fn load_report(setup: &DatapathSetup, cases: &[Case], out: &mut String) {
    if setup.bulk_mib == 0 && setup.concurrent == 0 {
        return;
    }
    let _ = write!(
        out,
        "\nbulk upload through the ClusterIP ({} MiB per round, one connection; MiB/s as min / median / max) and \
         the proxy's memory with {} connections held open at once (opened one after another, one byte each way)\n\n\
         | mode | services programmed | bulk MiB/s | held open | failed to open | open time (s) | proxy RSS before (MiB) | \
         with them (MiB) | per connection (KiB) | peak VmHWM (MiB) |\n|---|---|---|---|---|---|---|---|---|---|\n",
        setup.bulk_mib, setup.concurrent
    );
    let mib = |kib: u64| kib as f64 / 1024.0;
    for case in cases {
        let held = case.held.as_ref().map_or_else(
            || "– | – | – | – | – | – | –".to_string(),
            |h| {
                let per = (h.rss_held_kib as f64 - h.rss_before_kib as f64) / h.open.max(1) as f64;
                format!(
                    "{} | {} | {:.1} | {:.1} | {:.1} | {per:.2} | {:.1}",
                    h.open,
                    h.failed,
                    h.open_time.as_secs_f64(),
                    mib(h.rss_before_kib),
                    mib(h.rss_held_kib),
                    mib(h.peak_kib)
                )
            },
        );
        let _ = writeln!(out, "| {} | {} | {} | {held} |", case.mode, case.services + 1, case.bulk.summary(0));
    }
}

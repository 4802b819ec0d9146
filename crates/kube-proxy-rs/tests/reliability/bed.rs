//! The test bed of every scenario: testkit's simulated cluster cut down to
//! node-a with two echo pods and a client pod, the manifests file, the
//! real binary started in node-a (iptables or nftables mode, from the file
//! or an API server), and the rules read back from node-a's kernel.

use crate::observe;
use crate::proxy::{BINARY, Proxy};
use crate::state::{CLIENT_POD, ClusterState, ECHO_PODS, NODE, TARGET_PORT};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use testkit::cluster::{Cluster, Plan, PodPlan};
use testkit::netns::Netns;

/// The log line of every successful sync, per mode.
pub fn synced_line(mode: Mode) -> &'static str {
    match mode {
        Mode::Iptables => "synced iptables rules ip_family=IPv4",
        Mode::Nftables => "synced nftables rules ip_family=IPv4",
        Mode::Ipvs => "synced IPVS rules ip_family=IPv4",
    }
}

/// The proxy mode a scenario runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `--proxy-mode iptables --iptables-backend legacy`.
    Iptables,
    /// `--proxy-mode nftables`.
    Nftables,
    /// `--proxy-mode ipvs` (its companion rules with the legacy backend);
    /// only in the VM (`ipvs_vm.rs`): this machine's kernel has no IPVS.
    Ipvs,
}

/// Where the proxy reads the cluster from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The bed's manifests file.
    Manifests,
    /// An API server at this URL (reachable from node-a).
    Api(String),
}

/// How to start the proxy.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Its mode.
    pub mode: Mode,
    /// Its source.
    pub source: Source,
    /// More flags (sync periods...).
    pub extra: Vec<String>,
    /// A directory put first on the proxy's `PATH` (stand-in tools).
    pub path_first: Option<PathBuf>,
    /// A directory mounted on `/run` in a private mount namespace of the
    /// proxy (its own `/run/xtables.lock`, the host's untouched).
    pub private_run: Option<PathBuf>,
}

impl Launch {
    /// `mode` from `source`, nothing else.
    pub fn new(mode: Mode, source: Source) -> Self {
        Self { mode, source, extra: Vec::new(), path_first: None, private_run: None }
    }

    /// Adds flags.
    pub fn with(mut self, flags: &[&str]) -> Self {
        self.extra.extend(flags.iter().map(|f| (*f).to_string()));
        self
    }
}

/// node-a with its pods, and the manifests file.
pub struct Bed {
    /// The simulated cluster.
    pub cluster: Cluster,
}

impl Bed {
    /// Builds node-a, the echo pods and the client pod (no proxy yet).
    pub fn build() -> Self {
        testkit::netns::require_kernel();
        let mut plan = Plan::two_nodes();
        plan.nodes.truncate(1);
        let pod = |(name, ip): (&str, std::net::Ipv4Addr)| PodPlan {
            name: name.into(),
            node: NODE.into(),
            ip,
            ip6: None,
            extra_ips: Vec::new(),
            tcp_ports: vec![TARGET_PORT],
            udp_ports: Vec::new(),
        };
        plan.pods = ECHO_PODS.iter().copied().chain([CLIENT_POD]).map(pod).collect();
        Self { cluster: Cluster::build(&plan).expect("build the test bed") }
    }

    /// node-a's namespace.
    pub fn node(&self) -> &Netns {
        self.cluster.node(NODE).expect("node-a").ns()
    }

    /// The client pod's namespace name.
    pub fn client_netns(&self) -> String {
        self.cluster.pod(CLIENT_POD.0).expect("client pod").ns().name().to_string()
    }

    /// Writes `state` to the manifests file (atomically).
    pub fn write(&self, state: &ClusterState) {
        self.cluster.write_manifests(&state.manifests()).expect("write the manifests file");
    }

    /// A directory of the bed for the scenario's own files.
    pub fn dir(&self) -> PathBuf {
        self.cluster.manifests_path().parent().expect("the bed's directory").to_path_buf()
    }

    /// Starts the binary in node-a as `launch` says.
    pub fn start_proxy(&self, launch: &Launch) -> Proxy {
        let mut command = self.node().command(match &launch.private_run {
            Some(_) => "unshare",
            None => "setpriv",
        });
        if let Some(run) = &launch.private_run {
            command.args(["--mount", "--propagation", "private", "--", "sh", "-c"]);
            command.arg(r#"mount --bind "$0" /run && exec setpriv "$@""#).arg(run);
        }
        command.args(["--pdeathsig", "KILL", "--", &binary()]).args(self.args(launch));
        if std::env::var_os("IPVS_VM").is_some() {
            command.env("SSL_CERT_FILE", crate::ipvs_vm::VM_CA_FILE);
        }
        if let Some(dir) = &launch.path_first {
            let path = std::env::var("PATH").unwrap_or_default();
            command.env("PATH", format!("{}:{path}", dir.display()));
            // Stand-in tools are what is tested: the native writer (full syncs) would bypass them.
            command.env("KPRS_XTABLES_NATIVE", "0");
        }
        Proxy::start(command)
    }

    fn args(&self, launch: &Launch) -> Vec<String> {
        let mut args: Vec<String> = [
            "--hostname-override", NODE, "--cluster-cidr", "10.244.0.0/16", "--iptables-backend", "legacy",
            "--healthz-bind-address", observe::HEALTHZ, "--metrics-bind-address", observe::METRICS,
        ]
        .map(String::from)
        .into();
        args.extend(["--proxy-mode".into(), mode_flag(launch.mode).into()]);
        match &launch.source {
            Source::Manifests => args.extend(["--manifests".into(), path_text(&self.cluster.manifests_path())]),
            Source::Api(url) => args.extend(["--master".into(), url.clone()]),
        }
        args.extend(launch.extra.iter().cloned());
        args
    }

    /// The endpoints node-a's rules DNAT to, per service port name.
    pub fn rules_endpoints(&self, mode: Mode) -> BTreeMap<String, BTreeSet<String>> {
        match mode {
            Mode::Iptables => observe::iptables_endpoints(&self.nat()),
            Mode::Nftables => observe::nftables_endpoints(&self.nft_table()),
            Mode::Ipvs => observe::ipvs_endpoints(&self.ipvs_table(), crate::state::service_at),
        }
    }

    /// `ipvsadm -Ln` of node-a.
    pub fn ipvs_table(&self) -> String {
        self.node().exec("ipvsadm", &["-Ln"]).expect("ipvsadm -Ln")
    }

    /// `iptables-legacy-save -t nat` of node-a.
    pub fn nat(&self) -> String {
        self.node().exec("iptables-legacy-save", &["-t", "nat"]).expect("iptables-legacy-save")
    }

    /// `nft list table ip kube-proxy` of node-a (empty when there is none).
    pub fn nft_table(&self) -> String {
        match self.node().exec("nft", &["list", "table", "ip", "kube-proxy"]) {
            Ok(table) => table,
            Err(e) if format!("{e:#}").contains("No such file or directory") => String::new(),
            Err(e) => panic!("nft list table ip kube-proxy: {e:#}"),
        }
    }

    /// Waits until node-a's rules hold exactly `state`'s endpoints.
    pub fn wait_for_rules(&self, mode: Mode, state: &ClusterState, patience: Duration) {
        let want = state.expected();
        let start = Instant::now();
        loop {
            let have = self.rules_endpoints(mode);
            if have == want {
                return;
            }
            assert!(
                start.elapsed() < patience,
                "rules never matched the state:\n{}\n{}",
                diff(&want, &have),
                testkit::cluster::dump_rules(self.node()).lines().take(40).collect::<Vec<_>>().join("\n")
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Panics naming the differences unless node-a's rules hold exactly
    /// `state`'s endpoints.
    pub fn assert_rules(&self, mode: Mode, state: &ClusterState) {
        let (want, have) = (state.expected(), self.rules_endpoints(mode));
        assert!(want == have, "the rules differ from the final state:\n{}", diff(&want, &have));
    }
}

/// The binary under test: this build's, or the one `KPRS_RELIABILITY_BINARY`
/// names (a release build, for figures); in the VM, the one `ipvs-vm.sh`
/// put there.
fn binary() -> String {
    if std::env::var_os("IPVS_VM").is_some() {
        return crate::ipvs_vm::VM_BINARY.to_string();
    }
    std::env::var("KPRS_RELIABILITY_BINARY").unwrap_or_else(|_| BINARY.to_string())
}

fn mode_flag(mode: Mode) -> &'static str {
    match mode {
        Mode::Iptables => "iptables",
        Mode::Nftables => "nftables",
        Mode::Ipvs => "ipvs",
    }
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The first few service ports whose endpoints differ.
pub fn diff(want: &BTreeMap<String, BTreeSet<String>>, have: &BTreeMap<String, BTreeSet<String>>) -> String {
    let names: BTreeSet<&String> = want.keys().chain(have.keys()).collect();
    let differing: Vec<String> = names
        .into_iter()
        .filter(|n| want.get(*n) != have.get(*n))
        .map(|n| format!("  {n}: want {:?}, have {:?}", want.get(n), have.get(n)))
        .collect();
    format!("{} service ports differ; first:\n{}", differing.len(), differing[..differing.len().min(8)].join("\n"))
}

/// Runs `program args` (a kernel tool) in `ns`, panicking with its stderr
/// when it fails.
pub fn run_in(ns: &Netns, program: &str, args: &[&str]) -> String {
    ns.exec(program, args).unwrap_or_else(|e| panic!("{program} {args:?}: {e:#}"))
}

/// A command run in `ns` that must succeed.
pub fn sh_in(ns: &Netns, script: &str) -> String {
    let out = ns.command("sh").args(["-c", script]).output().expect("spawn sh");
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

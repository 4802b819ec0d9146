//! One traffic flow and its verdict: from a pod / node / the client, to an
//! address, over TCP or UDP; what it must do (reach these endpoints on this
//! port with this source seen, be refused at once, or be dropped); and a
//! failure text that says what was expected and what was seen.

use super::binomial;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;
use testkit::cluster::Cluster;
use testkit::echo::{Attempt, Outcome, Probe, Proto, probe};
use testkit::netns::Netns;

/// How long one attempt waits: the cost of every expected drop.
pub const TIMEOUT: Duration = Duration::from_millis(1500);
/// A refusal must come faster than this ("refused at once", not a timeout).
pub const REFUSED_WITHIN: Duration = Duration::from_millis(500);
/// How much slower than this machine the run is (1 here; more in an
/// emulated VM, where a sync can hold the one CPU for a second or more).
static SLOWDOWN: AtomicU32 = AtomicU32::new(1);

/// The endpoint sees the node that proxied the flow as its source
/// (userspace mode: the proxy opens its own connection to the endpoint),
/// whatever the flow's expectation says of the source.
static PROXY_IS_CLIENT: AtomicBool = AtomicBool::new(false);

/// Sets whether the proxying node is every flow's source at the endpoint.
pub fn set_proxy_is_client(on: bool) {
    PROXY_IS_CLIENT.store(on, Ordering::Relaxed);
}

/// Sets the run's slowdown: probe timeouts are multiplied by it.
pub fn set_slowdown(slowdown: u32) {
    SLOWDOWN.store(slowdown.max(1), Ordering::Relaxed);
}

/// `base` (a wait meant for this machine) times the run's slowdown.
pub fn stretched(base: Duration) -> Duration {
    base * SLOWDOWN.load(Ordering::Relaxed)
}

/// Attempts for a flow with one allowed endpoint.
const SINGLE_ATTEMPTS: usize = 3;

/// Where a flow starts.
#[derive(Clone, Copy, Debug)]
pub enum From {
    /// A pod, from its own address.
    Pod(&'static str),
    /// A pod, from one of its extra addresses.
    PodAs(&'static str, Ipv4Addr),
    /// A node itself (a process in the node's namespace).
    Node(&'static str),
    /// The outside client, from one of its addresses (either family).
    Client(IpAddr),
}

/// The source address the endpoint must see.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// The flow's own source address (not masqueraded).
    Kept,
    /// Masqueraded by this node: one of its addresses (wire IP or pod gateway).
    MasqBy(&'static str),
    /// Exactly this address.
    Is(IpAddr),
}

/// What a flow must do.
#[derive(Clone, Debug)]
pub enum Expect {
    /// Every attempt answered by one of `eps` on `port`, with the source
    /// `seen`; if `all`, every one of `eps` answered at least once.
    Reach { eps: &'static [&'static str], port: u16, seen: Source, all: bool },
    /// Refused (REJECT: ICMP port-unreachable or RST), within [`REFUSED_WITHIN`].
    Refused,
    /// Accepted and reset at once, within [`REFUSED_WITHIN`] (or refused
    /// outright): userspace mode's proxy port without endpoints.
    Reset,
    /// No answer at all within [`TIMEOUT`] (DROP).
    Dropped,
    /// Not judged: what happens is only reported, because of the known
    /// issue named here (the flows after it are judged as usual).
    Known(&'static str),
}

/// One row of a case table.
#[derive(Clone, Debug)]
pub struct Flow {
    /// Where it starts.
    pub from: From,
    /// TCP or UDP.
    pub proto: Proto,
    /// Where it goes.
    pub dst: SocketAddr,
    /// What must happen.
    pub expect: Expect,
    /// Attempts, if not the default (see [`Flow::attempts`]).
    pub attempts: Option<usize>,
    /// How long one attempt waits, if not [`TIMEOUT`].
    pub timeout: Option<Duration>,
}

/// A TCP flow.
pub fn tcp(from: From, dst: SocketAddr, expect: Expect) -> Flow {
    Flow { from, proto: Proto::Tcp, dst, expect, attempts: None, timeout: None }
}

/// A UDP flow.
pub fn udp(from: From, dst: SocketAddr, expect: Expect) -> Flow {
    Flow { from, proto: Proto::Udp, dst, expect, attempts: None, timeout: None }
}

/// Reach `eps` on `port` (every one of them, if several), seeing `seen`
/// as the source.
pub fn reach(eps: &'static [&'static str], port: u16, seen: Source) -> Expect {
    Expect::Reach { eps, port, seen, all: eps.len() > 1 }
}

/// Reach any of `eps` on `port`, seeing `seen` as the source (the cases
/// that look at which endpoint answered themselves).
pub fn reach_any(eps: &'static [&'static str], port: u16, seen: Source) -> Expect {
    Expect::Reach { eps, port, seen, all: false }
}

impl Flow {
    /// Overrides the number of attempts (e.g. to show that only the local
    /// endpoint is ever used).
    pub fn times(mut self, n: usize) -> Self {
        self.attempts = Some(n);
        self
    }

    /// Lets each attempt wait `timeout` instead of [`TIMEOUT`] (e.g. long
    /// enough for one TCP SYN retransmission, after 1 s).
    pub fn waiting(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How many attempts: one for a refusal or a drop; for several allowed
    /// endpoints enough that missing one by chance is below 1e-7 (see
    /// [`binomial::attempts_to_see_all`]); a few otherwise.
    pub fn attempts(&self) -> usize {
        self.attempts.unwrap_or(match &self.expect {
            Expect::Reach { eps, all: true, .. } => binomial::attempts_to_see_all(eps.len(), 1e-7),
            Expect::Reach { .. } => SINGLE_ATTEMPTS,
            Expect::Refused | Expect::Reset | Expect::Dropped | Expect::Known(_) => 1,
        })
    }

    /// "pod ca (10.244.0.200) -> tcp 10.96.10.11:80".
    pub fn describe(&self) -> String {
        let from = match self.from {
            From::Pod(p) => format!("pod {p} ({})", self.pod_source(p)),
            From::PodAs(p, ip) => format!("pod {p} (as {ip})"),
            From::Node(n) => format!("node {n}"),
            From::Client(ip) => format!("client {ip}"),
        };
        format!("{from} -> {} {}", self.proto, self.dst)
    }

    /// Runs the flow; `Ok(summary of what was seen)` or `Err(failure text)`.
    pub fn run(&self, cluster: &Cluster) -> Result<String, String> {
        let attempts = self.probe(cluster)?;
        self.check(cluster, &attempts)
    }

    /// Makes the flow's attempts.
    pub fn probe(&self, cluster: &Cluster) -> Result<Vec<Attempt>, String> {
        let ns = self.namespace(cluster)?;
        let p = Probe { proto: self.proto, dst: self.dst, src: self.bind_source(), timeout: stretched(self.timeout.unwrap_or(TIMEOUT)) };
        probe(ns, p, self.attempts()).map_err(|e| format!("{}: cannot probe: {e:#}", self.describe()))
    }

    /// Judges `attempts`: `Ok(summary of what was seen)` or `Err(failure
    /// text: the flow, what was expected, what is wrong, what was seen)`.
    pub fn check(&self, cluster: &Cluster, attempts: &[Attempt]) -> Result<String, String> {
        let seen = summarize(attempts);
        match self.verdict(cluster, attempts) {
            None if let Expect::Known(issue) = &self.expect => Ok(format!("{seen} [not judged, known issue: {issue}]")),
            None => Ok(seen),
            Some(problem) => Err(format!(
                "{}\n    expected: {}\n    problem:  {problem}\n    saw:      {}",
                self.describe(),
                self.expected(cluster),
                seen.replace('\n', "\n              ")
            )),
        }
    }

    fn namespace<'c>(&self, cluster: &'c Cluster) -> Result<&'c Netns, String> {
        match self.from {
            From::Pod(p) | From::PodAs(p, _) => cluster.pod(p).map(|p| p.ns()).ok_or(format!("no pod {p}")),
            From::Node(n) => cluster.node(n).map(|n| n.ns()).ok_or(format!("no node {n}")),
            From::Client(_) => Ok(cluster.client().ns()),
        }
    }

    fn bind_source(&self) -> Option<IpAddr> {
        match self.from {
            From::Pod(_) | From::Node(_) => None,
            From::PodAs(_, ip) => Some(IpAddr::V4(ip)),
            From::Client(ip) => Some(ip),
        }
    }

    /// The flow's own source address, where it is known in advance.
    fn own_source(&self) -> Option<IpAddr> {
        match self.from {
            From::Pod(p) => Some(self.pod_source(p)),
            From::PodAs(_, ip) => Some(IpAddr::V4(ip)),
            From::Client(ip) => Some(ip),
            From::Node(_) => None,
        }
    }

    /// The node whose portal rules catch the flow first: the node it starts
    /// on, unless it goes to a node's address (a NodePort: that node's);
    /// the client's flows to a node's address go to that node, to any other
    /// address (LoadBalancer, externalIPs: routed via node-a) to node-a.
    fn proxying_node(&self, cluster: &Cluster) -> &'static str {
        let node_of_dst = ["node-a", "node-b"].into_iter().find(|n| cluster.node(n).is_some_and(|n| n.addresses().contains(&self.dst.ip())));
        let pod_node = |p: &str| if cluster.pod(p).is_some_and(|pod| pod.node() == "node-b") { "node-b" } else { "node-a" };
        match self.from {
            From::Node(n) => node_of_dst.unwrap_or(n),
            From::Pod(p) | From::PodAs(p, _) => node_of_dst.unwrap_or_else(|| pod_node(p)),
            From::Client(_) => node_of_dst.unwrap_or("node-a"),
        }
    }

    /// Pod `p`'s address of the destination's family.
    fn pod_source(&self, p: &str) -> IpAddr {
        match self.dst {
            SocketAddr::V4(_) => IpAddr::V4(super::scenario::pod_ip(p)),
            SocketAddr::V6(_) => IpAddr::V6(super::scenario::pod_ip6(p)),
        }
    }

    fn allowed_sources(&self, cluster: &Cluster, seen: Source) -> Vec<IpAddr> {
        let seen = if PROXY_IS_CLIENT.load(Ordering::Relaxed) { Source::MasqBy(self.proxying_node(cluster)) } else { seen };
        match seen {
            Source::Kept => self.own_source().into_iter().collect(),
            Source::MasqBy(node) => {
                let addresses = cluster.node(node).map(|n| n.addresses().to_vec()).unwrap_or_default();
                addresses.into_iter().filter(|a| a.is_ipv4() == self.dst.is_ipv4()).collect()
            }
            Source::Is(ip) => vec![ip],
        }
    }

    fn expected(&self, cluster: &Cluster) -> String {
        let n = self.attempts();
        match &self.expect {
            Expect::Reach { eps, port, seen, all } => {
                let sources: Vec<String> = self.allowed_sources(cluster, *seen).iter().map(IpAddr::to_string).collect();
                let how = match seen {
                    Source::Kept => "source kept",
                    Source::MasqBy(_) => "masqueraded",
                    Source::Is(_) => "source",
                };
                let all = if *all { ", every one of them seen" } else { "" };
                format!("{n}/{n} answered by {{{}}}{all} on port {port}; endpoint sees {how} {{{}}}", eps.join(", "), sources.join(", "))
            }
            Expect::Refused => format!("refused (REJECT) within {:?}", stretched(REFUSED_WITHIN)),
            Expect::Reset => format!("accepted and reset (or refused) within {:?}", stretched(REFUSED_WITHIN)),
            Expect::Dropped => format!("no answer within {:?} (DROP)", stretched(self.timeout.unwrap_or(TIMEOUT))),
            Expect::Known(issue) => format!("anything (not judged: {issue})"),
        }
    }

    /// What is wrong with `attempts`, or `None` if they are as expected.
    fn verdict(&self, cluster: &Cluster, attempts: &[Attempt]) -> Option<String> {
        match &self.expect {
            Expect::Reach { eps, port, seen, all } => {
                let sources = self.allowed_sources(cluster, *seen);
                for a in attempts {
                    let Outcome::Answered(ans) = &a.outcome else { return Some(format!("an attempt was {}", a.outcome)) };
                    if !eps.contains(&ans.ep.as_str()) {
                        return Some(format!("answered by {}, not an allowed endpoint", ans.ep));
                    }
                    if ans.local.port() != *port {
                        return Some(format!("{} reached on port {}, not {port}", ans.ep, ans.local.port()));
                    }
                    if !sources.contains(&ans.peer.ip()) {
                        return Some(format!("{} saw source {}", ans.ep, ans.peer.ip()));
                    }
                }
                let missing: Vec<&str> = eps.iter().copied().filter(|ep| !answered_by(attempts, ep)).collect();
                (*all && !missing.is_empty()).then(|| format!("never answered by {}", missing.join(", ")))
            }
            Expect::Refused => attempts.iter().find_map(|a| match a.outcome {
                Outcome::Refused if a.took <= stretched(REFUSED_WITHIN) => None,
                Outcome::Refused => Some(format!("refused only after {:?}", a.took)),
                ref other => Some(format!("an attempt was {other}")),
            }),
            Expect::Reset => attempts.iter().find_map(|a| match &a.outcome {
                _ if a.took > stretched(REFUSED_WITHIN) => Some(format!("reset only after {:?}", a.took)),
                Outcome::Refused => None,
                Outcome::Failed(why) if why.contains("reset") => None,
                other => Some(format!("an attempt was {other}")),
            }),
            Expect::Dropped => attempts.iter().find_map(|a| match a.outcome {
                Outcome::TimedOut => None,
                ref other => Some(format!("an attempt was {other}")),
            }),
            Expect::Known(_) => None,
        }
    }
}

fn answered_by(attempts: &[Attempt], ep: &str) -> bool {
    attempts.iter().any(|a| matches!(&a.outcome, Outcome::Answered(ans) if ans.ep == ep))
}

/// "answered by a1 (reached 10.244.0.11:8080, endpoint saw 10.244.0.200) x12;
/// timed out x1": attempts grouped by outcome, the source port left out.
pub fn summarize(attempts: &[Attempt]) -> String {
    let mut groups: BTreeMap<String, usize> = BTreeMap::new();
    for a in attempts {
        let key = match &a.outcome {
            Outcome::Answered(ans) => format!("answered by {} (reached {}, endpoint saw {})", ans.ep, ans.local, ans.peer.ip()),
            Outcome::Refused => format!("refused (after {} ms)", a.took.as_millis()),
            other => other.to_string(),
        };
        *groups.entry(key).or_default() += 1;
    }
    let mut text = String::new();
    for (i, (what, n)) in groups.iter().enumerate() {
        let _ = write!(text, "{}{what} x{n}", if i > 0 { "\n" } else { "" });
    }
    text
}

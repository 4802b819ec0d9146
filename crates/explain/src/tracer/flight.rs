//! A packet in flight: the header fields and per-connection state
//! (firewall mark, NAT done so far) the rules see and change, plus the
//! path it has taken. Each branch of a trace owns its own copy.

use super::context::TraceContext;
use super::packet::{Origin, Packet, Protocol};
use super::verdict::{Outcome, Path, Step};
use std::net::{IpAddr, SocketAddr};

/// A netfilter hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hook {
    Prerouting,
    Input,
    Forward,
    Output,
    Postrouting,
}

impl Hook {
    /// The built-in chain of this hook.
    pub fn chain(self) -> &'static str {
        match self {
            Hook::Prerouting => "PREROUTING",
            Hook::Input => "INPUT",
            Hook::Forward => "FORWARD",
            Hook::Output => "OUTPUT",
            Hook::Postrouting => "POSTROUTING",
        }
    }
}

/// What an interface match can know about an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Iface {
    /// The hook has no such interface (no input interface in OUTPUT).
    Absent,
    /// Known name.
    Known(String),
    /// There is one but the trace does not know which.
    Unknown,
}

/// The packet and its connection's state at one point of one path.
#[derive(Debug, Clone)]
pub(crate) struct Flight {
    pub protocol: Protocol,
    pub source: IpAddr,
    pub source_port: u16,
    pub destination: IpAddr,
    pub destination_port: u16,
    /// nfmark.
    pub mark: u32,
    /// A DNAT happened (conntrack state `DNAT`).
    pub dnat: bool,
    /// A SNAT / MASQUERADE happened (conntrack state `SNAT`).
    pub snat: bool,
    /// The hook being traversed.
    pub hook: Hook,
    /// The input interface for PREROUTING / INPUT / FORWARD.
    pub input: Iface,
    /// The chance this path is taken, from the random choices on it.
    pub probability: f64,
    /// The path assumed a returning client (a session-affinity hit).
    pub sticky: bool,
    /// Where this path went.
    pub steps: Vec<Step>,
}

impl Flight {
    /// How this path ends once it made it through every hook.
    pub fn through_every_hook(&self, delivered_locally: bool) -> Outcome {
        if self.dnat {
            Outcome::Dnat { to: self.destination(), masquerade: self.snat }
        } else if delivered_locally {
            Outcome::Local
        } else {
            Outcome::Accept { masquerade: self.snat }
        }
    }

    /// This path, ended with `outcome`.
    pub fn ended(self, outcome: Outcome) -> Path {
        Path { outcome, probability: self.probability, sticky: self.sticky, steps: self.steps }
    }

    /// The packet as it enters its first hook.
    pub fn start(packet: &Packet) -> Self {
        let (hook, input) = match &packet.origin {
            Origin::Local => (Hook::Output, Iface::Absent),
            Origin::Inbound { interface: Some(name) } => (Hook::Prerouting, Iface::Known(name.clone())),
            Origin::Inbound { interface: None } => (Hook::Prerouting, Iface::Unknown),
        };
        Self {
            protocol: packet.protocol,
            source: packet.source,
            source_port: packet.source_port,
            destination: packet.destination.ip(),
            destination_port: packet.destination.port(),
            mark: 0,
            dnat: false,
            snat: false,
            hook,
            input,
            probability: 1.0,
            sticky: false,
            steps: Vec::new(),
        }
    }

    /// The current destination.
    pub fn destination(&self) -> SocketAddr {
        SocketAddr::new(self.destination, self.destination_port)
    }

    /// The input interface as `-i` sees it in the current hook.
    pub fn input_interface(&self) -> Iface {
        match self.hook {
            Hook::Output | Hook::Postrouting => Iface::Absent,
            Hook::Prerouting | Hook::Input | Hook::Forward => self.input.clone(),
        }
    }

    /// The output interface as `-o` sees it in the current hook (routed on
    /// the current destination).
    pub fn output_interface(&self, ctx: &TraceContext) -> Iface {
        match self.hook {
            Hook::Prerouting | Hook::Input => Iface::Absent,
            Hook::Forward | Hook::Output | Hook::Postrouting => match ctx.output_interface(self.destination) {
                Some(name) => Iface::Known(name.to_string()),
                None => Iface::Unknown,
            },
        }
    }
}

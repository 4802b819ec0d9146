//! The one-line answer of an echo server: who answered, on which address,
//! and which source address it saw.

use std::fmt;
use std::net::SocketAddr;

/// What an echo endpoint says about one connection or datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The endpoint's name (the pod that answered).
    pub ep: String,
    /// The address:port the connection reached at the endpoint (after DNAT).
    pub local: SocketAddr,
    /// The source address:port the endpoint saw (after any SNAT).
    pub peer: SocketAddr,
}

impl Answer {
    /// Parses `ep=<name> local=<ip:port> peer=<ip:port>` (trailing newline
    /// allowed); `None` if the text is anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let mut ep = None;
        let mut local = None;
        let mut peer = None;
        for field in text.trim_end().split(' ') {
            let (key, value) = field.split_once('=')?;
            match key {
                "ep" => ep = Some(value.to_string()),
                "local" => local = value.parse().ok(),
                "peer" => peer = value.parse().ok(),
                _ => return None,
            }
        }
        Some(Self { ep: ep?, local: local?, peer: peer? })
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ep={} local={} peer={}", self.ep, self.local, self.peer)
    }
}

//! What a listener's tasks share with [`crate::Forwarder::apply`]: its
//! endpoint chooser (replaced whole under its lock when the caller sends
//! new backends) and its counters.

use crate::balancer::Balancer;
use crate::tally::Tally;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a connect to an endpoint may take, per attempt (upstream
/// userspace proxier's `EndpointDialTimeouts`): an endpoint that refuses or
/// times out is followed by the next one, four attempts at most.
pub(crate) const DIAL_TIMEOUTS: [Duration; 4] =
    [Duration::from_millis(250), Duration::from_millis(500), Duration::from_secs(1), Duration::from_secs(2)];

/// One listener's shared state.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The listener's key, for logs.
    pub(crate) name: String,
    balancer: Mutex<Balancer>,
    pub(crate) tally: Tally,
}

impl Shared {
    pub(crate) fn new(name: String, backends: &[SocketAddr], affinity: Option<Duration>) -> Self {
        Self { name, balancer: Mutex::new(Balancer::new(backends, affinity)), tally: Tally::default() }
    }

    /// Takes the caller's new backends and affinity, at once.
    pub(crate) fn update(&self, backends: &[SocketAddr], affinity: Option<Duration>) {
        self.balancer.lock().unwrap_or_else(std::sync::PoisonError::into_inner).update(backends, affinity);
    }

    /// The endpoint for `client`'s next attempt (see [`Balancer::next`]).
    pub(crate) fn next_endpoint(&self, client: IpAddr, reset: bool) -> Option<SocketAddr> {
        self.balancer.lock().unwrap_or_else(std::sync::PoisonError::into_inner).next(client, reset, Instant::now())
    }
}

//! Endpoint choice (upstream userspace proxier's `LoadBalancerRR`):
//! round-robin over the backends in their given order; with ClientIP
//! affinity a client IP keeps its endpoint while it used it within the
//! timeout. A retry after a failed connect passes `reset`, which skips the
//! sticky entry and records the newly picked endpoint instead.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// Sticky entries are swept of expired ones every this many insertions.
const SWEEP_EVERY: usize = 1024;

/// One listener's endpoint chooser.
#[derive(Debug, Default)]
pub(crate) struct Balancer {
    backends: Vec<SocketAddr>,
    affinity: Option<Duration>,
    next: usize,
    sticky: HashMap<IpAddr, Sticky>,
    inserts: usize,
}

#[derive(Debug)]
struct Sticky {
    endpoint: SocketAddr,
    last_used: Instant,
}

impl Balancer {
    /// A chooser over `backends`.
    pub(crate) fn new(backends: &[SocketAddr], affinity: Option<Duration>) -> Self {
        let mut balancer = Self::default();
        balancer.update(backends, affinity);
        balancer
    }

    /// New backends or affinity (upstream's `OnEndpointsUpdate`): a changed
    /// backend list restarts the round at its first entry and forgets the
    /// clients stuck to endpoints that are gone.
    pub(crate) fn update(&mut self, backends: &[SocketAddr], affinity: Option<Duration>) {
        if self.backends != backends {
            self.backends = backends.to_vec();
            self.next = 0;
            self.sticky.retain(|_, sticky| backends.contains(&sticky.endpoint));
        }
        if affinity.is_none() {
            self.sticky.clear();
        }
        self.affinity = affinity;
    }

    /// The endpoint for a new connection from `client`; `None` when there
    /// is no backend.
    pub(crate) fn next(&mut self, client: IpAddr, reset: bool, now: Instant) -> Option<SocketAddr> {
        if self.backends.is_empty() {
            return None;
        }
        if let Some(timeout) = self.affinity
            && !reset
            && let Some(sticky) = self.sticky.get_mut(&client)
            && now.saturating_duration_since(sticky.last_used) < timeout
        {
            sticky.last_used = now;
            return Some(sticky.endpoint);
        }
        let endpoint = self.backends[self.next % self.backends.len()];
        self.next = (self.next + 1) % self.backends.len();
        if let Some(timeout) = self.affinity {
            self.stick(client, endpoint, now, timeout);
        }
        Some(endpoint)
    }

    fn stick(&mut self, client: IpAddr, endpoint: SocketAddr, now: Instant, timeout: Duration) {
        self.sticky.insert(client, Sticky { endpoint, last_used: now });
        self.inserts += 1;
        if self.inserts.is_multiple_of(SWEEP_EVERY) {
            self.sticky.retain(|_, sticky| now.saturating_duration_since(sticky.last_used) < timeout);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn addrs(ports: &[u16]) -> Vec<SocketAddr> {
        ports.iter().map(|p| SocketAddr::from(([10, 0, 0, 1], *p))).collect()
    }

    fn client(last: u8) -> IpAddr {
        IpAddr::from([192, 168, 0, last])
    }

    fn ports(balancer: &mut Balancer, clients: &[u8], now: Instant) -> Vec<u16> {
        clients.iter().map(|c| balancer.next(client(*c), false, now).unwrap().port()).collect()
    }

    #[test]
    fn round_robin_in_the_given_order() {
        let mut balancer = Balancer::new(&addrs(&[1, 2, 3]), None);
        let now = Instant::now();
        assert_eq!(ports(&mut balancer, &[1, 1, 1, 1, 2], now), [1, 2, 3, 1, 2]);
    }

    #[test]
    fn no_backend_no_endpoint() {
        let mut balancer = Balancer::new(&[], Some(Duration::from_secs(1)));
        assert_eq!(balancer.next(client(1), false, Instant::now()), None);
    }

    #[test]
    fn affinity_holds_within_the_timeout_since_last_use() {
        let timeout = Duration::from_secs(10);
        let mut balancer = Balancer::new(&addrs(&[1, 2, 3]), Some(timeout));
        let t0 = Instant::now();
        assert_eq!(ports(&mut balancer, &[1, 2, 1, 2], t0), [1, 2, 1, 2]);
        // Used at t0 + 9 s, so still held at t0 + 18 s.
        assert_eq!(ports(&mut balancer, &[1], t0 + Duration::from_secs(9)), [1]);
        assert_eq!(ports(&mut balancer, &[1, 2], t0 + Duration::from_secs(18)), [1, 3]);
    }

    #[test]
    fn reset_picks_the_next_and_sticks_to_it() {
        let mut balancer = Balancer::new(&addrs(&[1, 2]), Some(Duration::from_secs(10)));
        let now = Instant::now();
        assert_eq!(balancer.next(client(1), false, now).unwrap().port(), 1);
        assert_eq!(balancer.next(client(1), true, now).unwrap().port(), 2);
        assert_eq!(balancer.next(client(1), false, now).unwrap().port(), 2);
    }

    #[test]
    fn changed_backends_restart_the_round_and_drop_gone_endpoints() {
        let mut balancer = Balancer::new(&addrs(&[1, 2, 3]), Some(Duration::from_secs(10)));
        let now = Instant::now();
        assert_eq!(ports(&mut balancer, &[1, 2], now), [1, 2]);
        balancer.update(&addrs(&[2, 4]), Some(Duration::from_secs(10)));
        // Client 2 keeps endpoint 2; client 1's endpoint 1 is gone.
        assert_eq!(ports(&mut balancer, &[2, 1, 3], now), [2, 2, 4]);
        // The same list again changes nothing.
        balancer.update(&addrs(&[2, 4]), Some(Duration::from_secs(10)));
        assert_eq!(ports(&mut balancer, &[5], now), [2]);
    }
}

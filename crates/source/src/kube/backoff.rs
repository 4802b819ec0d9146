//! How long the watchers wait before retrying after a failed list or
//! watch: exponential with jitter, as client-go's reflector does.

use std::hash::{BuildHasher, Hasher, RandomState};
use std::time::Duration;

/// Retry delays of the watchers: the first retry waits `initial`, each
/// further one twice as long up to `max`; every wait is stretched by a
/// random 0–100 % (client-go's jitter factor 1.0) so that many nodes do
/// not reconnect to a recovering API server in lock step. Any successful
/// event resets the delay to `initial`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Delay before the first retry.
    pub initial: Duration,
    /// Longest delay (before jitter).
    pub max: Duration,
}

impl Default for Backoff {
    /// client-go's reflector: 800 ms doubling to 30 s.
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
        }
    }
}

/// The running state of a [`Backoff`], as kube's `StreamBackoff` wants it.
#[derive(Debug)]
pub(crate) struct Retry {
    settings: Backoff,
    next: Duration,
}

impl Retry {
    pub(crate) fn new(settings: Backoff) -> Self {
        Self {
            settings,
            next: settings.initial,
        }
    }
}

impl Iterator for Retry {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let delay = self.next.min(self.settings.max);
        self.next = delay.saturating_mul(2).min(self.settings.max);
        Some(delay.mul_f64(1.0 + random_fraction()))
    }
}

impl ::kube::runtime::utils::Backoff for Retry {
    fn reset(&mut self) {
        self.next = self.settings.initial;
    }
}

/// A number in [0, 1), random enough for jitter (std's per-process hash
/// keys; no RNG dependency needed).
pub(crate) fn random_fraction() -> f64 {
    let bits = RandomState::new().build_hasher().finish() >> 11;
    bits as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ::kube::runtime::utils::Backoff as _;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn doubles_up_to_max_with_up_to_full_jitter_and_resets() {
        let mut retry = Retry::new(Backoff {
            initial: ms(100),
            max: ms(500),
        });
        for base in [100, 200, 400, 500, 500] {
            let d = retry.next().unwrap();
            assert!(d >= ms(base) && d < ms(2 * base), "{d:?} for base {base}ms");
        }
        retry.reset();
        let d = retry.next().unwrap();
        assert!(d >= ms(100) && d < ms(200), "{d:?} after reset");
    }

    #[test]
    fn jitter_varies() {
        let mut retry = Retry::new(Backoff::default());
        let first: Vec<Duration> = (0..8)
            .map(|_| {
                retry.reset();
                retry.next().unwrap()
            })
            .collect();
        assert!(first.iter().any(|d| *d != first[0]), "{first:?}");
    }
}

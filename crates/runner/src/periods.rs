//! The three durations that bound when syncs run.

use std::time::Duration;

use crate::RunnerError;

/// Default first retry delay after a failed sync (doubled after each further
/// failure, capped at `max_interval`).
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_secs(1);

/// When syncs may and must run: `min_interval` (upstream's minSyncPeriod),
/// `max_interval` (syncPeriod) and the first retry delay after a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Periods {
    min_interval: Duration,
    max_interval: Duration,
    initial_backoff: Duration,
}

impl Periods {
    /// Checks `0 <= min_interval <= max_interval` and `max_interval > 0`.
    pub fn new(min_interval: Duration, max_interval: Duration) -> Result<Periods, RunnerError> {
        if max_interval.is_zero() || min_interval > max_interval {
            return Err(RunnerError::InvalidPeriods {
                min: min_interval,
                max: max_interval,
            });
        }
        Ok(Periods {
            min_interval,
            max_interval,
            initial_backoff: DEFAULT_INITIAL_BACKOFF,
        })
    }

    /// Sets the first retry delay after a failed sync (default 1s).
    pub fn with_initial_backoff(mut self, initial_backoff: Duration) -> Periods {
        self.initial_backoff = initial_backoff;
        self
    }

    /// Least time between the starts of two syncs.
    pub fn min_interval(&self) -> Duration {
        self.min_interval
    }

    /// Most time between the end of one sync and the start of the next.
    pub fn max_interval(&self) -> Duration {
        self.max_interval
    }

    /// First retry delay, capped at `max_interval`.
    pub fn initial_backoff(&self) -> Duration {
        self.initial_backoff.min(self.max_interval)
    }

    /// The delay after `previous`: doubled, capped at `max_interval`.
    pub fn next_backoff(&self, previous: Duration) -> Duration {
        previous.saturating_mul(2).min(self.max_interval)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn rejects_zero_max_and_min_above_max() {
        assert!(Periods::new(Duration::ZERO, Duration::ZERO).is_err());
        assert!(Periods::new(Duration::from_secs(2), Duration::from_secs(1)).is_err());
        assert!(Periods::new(Duration::ZERO, Duration::from_secs(1)).is_ok());
        assert!(Periods::new(Duration::from_secs(1), Duration::from_secs(1)).is_ok());
    }

    #[test]
    fn backoff_doubles_up_to_max() {
        let p = Periods::new(Duration::from_secs(1), Duration::from_secs(30)).unwrap();
        assert_eq!(p.initial_backoff(), Duration::from_secs(1));
        assert_eq!(
            p.next_backoff(Duration::from_secs(8)),
            Duration::from_secs(16)
        );
        assert_eq!(
            p.next_backoff(Duration::from_secs(16)),
            Duration::from_secs(30)
        );
        let short = Periods::new(Duration::ZERO, Duration::from_millis(500)).unwrap();
        assert_eq!(short.initial_backoff(), Duration::from_millis(500));
    }
}

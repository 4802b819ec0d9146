//! The runner's one failure: periods that cannot be honoured.

use std::time::Duration;

/// Why a runner could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunnerError {
    /// `max_interval` is zero or below `min_interval`.
    #[error(
        "invalid sync periods: min interval {min:?} must be at most max interval {max:?}, and max must be above zero"
    )]
    InvalidPeriods {
        /// The minimum interval asked for.
        min: Duration,
        /// The maximum interval asked for.
        max: Duration,
    },
}

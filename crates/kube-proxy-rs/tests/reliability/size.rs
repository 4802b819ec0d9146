//! How big a run is: scaled down for CI (the whole suite within about five
//! minutes on two cores), or the full sizes with
//! `KPRS_RELIABILITY_FULL=1` (1,000 EndpointSlice updates a second for
//! 60 s against 1,000 services; the API server gone for two minutes).

use std::time::Duration;

/// The environment variable that asks for the full sizes.
pub const FULL_ENV: &str = "KPRS_RELIABILITY_FULL";

/// The sizes of one run.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    /// Churned services (healthy ones come on top).
    pub services: usize,
    /// EndpointSlice updates a second.
    pub rate: u32,
    /// How long the churn lasts.
    pub churn: Duration,
    /// How long the API server stays away.
    pub api_down: Duration,
}

impl Size {
    /// CI's sizes, or the full ones when [`FULL_ENV`] is `1`.
    pub fn from_env() -> Self {
        if std::env::var(FULL_ENV).is_ok_and(|v| v == "1") {
            Self { services: 1000, rate: 1000, churn: Duration::from_secs(60), api_down: Duration::from_secs(120) }
        } else {
            Self { services: 300, rate: 500, churn: Duration::from_secs(10), api_down: Duration::from_secs(8) }
        }
    }

    /// `1000 services, 1000 updates/s for 60 s`.
    pub fn describe(&self) -> String {
        format!("{} services, {} updates/s for {} s", self.services, self.rate, self.churn.as_secs())
    }
}

//! How Go prints things upstream's answers contain: `time.Time` in JSON,
//! floats in the Prometheus text format, `%q` strings. Pure functions.

mod float;
mod quote;
mod time;

pub(crate) use float::format_float;
pub(crate) use quote::quote;
pub(crate) use time::{format_rfc3339_nano, unix_seconds, GO_ZERO_TIME_JSON};

//! The bounded-frequency sync runner (upstream's `BoundedFrequencyRunner`):
//! the step between the tracker and a backend's `sync()`.
//!
//! Anyone holding a [`Handle`] asks for a sync with [`Handle::run`]; requests
//! made while one is pending are coalesced into one sync. The runner never
//! starts two syncs closer than `min_interval`, starts one at least every
//! `max_interval` even when nothing asked, retries a failed sync with
//! exponential backoff (never waiting longer than `max_interval`), and runs
//! nothing at all until [`Handle::ready`] says the initial list of Services
//! and EndpointSlices is complete: a proxy that synced an empty cache would
//! wipe a working node's rules on restart.
//!
//! [`FullSyncPolicy`] is the one place that decides whether a sync is a
//! full or a partial one.
//!
//! Time is `tokio::time`, so the behaviour is tested under paused time.

mod error;
mod full_sync;
mod handle;
mod periods;
mod sync_loop;

pub use error::RunnerError;
pub use full_sync::{FullSyncPolicy, FullSyncReason, SyncScope};
pub use handle::{Handle, Status};
pub use periods::Periods;
pub use sync_loop::{Runner, Trigger};

//! The one full-sync policy: whether the sync about to run writes
//! everything (full) or only what changed (partial). Every mode's proxier
//! obeys what this decides; none decides again.
//!
//! A sync is full when
//! * the runner asks for it ([`Trigger::Initial`], [`Trigger::Periodic`],
//!   [`Trigger::Retry`]),
//! * no full sync has succeeded yet,
//! * the last sync failed,
//! * the last full sync is `syncPeriod` old,
//! * or the proxier says the kernel's state is unknown to it (iptables
//!   mode: our canary chain is gone, someone flushed the tables) — asked
//!   only when nothing above already decided, so a full sync costs no
//!   extra kernel query.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::Trigger;

/// Why a sync is a full one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FullSyncReason {
    /// The runner asked for it (initial, periodic or retry trigger).
    Asked(Trigger),
    /// No full sync has succeeded yet.
    NoneYet,
    /// The previous sync failed.
    LastFailed,
    /// The last full sync is `syncPeriod` old.
    SyncPeriodElapsed,
    /// The proxier does not know what the kernel holds.
    StateUnknown,
}

impl fmt::Display for FullSyncReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FullSyncReason::Asked(trigger) => write!(f, "{trigger:?} sync"),
            FullSyncReason::NoneYet => f.write_str("no full sync yet"),
            FullSyncReason::LastFailed => f.write_str("the last sync failed"),
            FullSyncReason::SyncPeriodElapsed => f.write_str("syncPeriod since the last full sync"),
            FullSyncReason::StateUnknown => f.write_str("kernel state unknown"),
        }
    }
}

/// How much one sync writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncScope {
    /// Everything, for this reason.
    Full(FullSyncReason),
    /// Only what changed since the last sync.
    Partial,
}

impl SyncScope {
    /// Whether the sync writes everything.
    pub fn is_full(self) -> bool {
        matches!(self, SyncScope::Full(_))
    }
}

/// The full-sync policy and what it remembers between syncs.
#[derive(Clone, Debug)]
pub struct FullSyncPolicy {
    sync_period: Duration,
    last_full: Option<Instant>,
    last_failed: bool,
}

impl FullSyncPolicy {
    /// A policy whose first sync is full and which wants a full sync at
    /// least every `sync_period`.
    pub fn new(sync_period: Duration) -> Self {
        Self {
            sync_period,
            last_full: None,
            last_failed: false,
        }
    }

    /// The reason a sync starting at `now` for `trigger` must be full,
    /// without asking the proxier; `None` when only the proxier's state
    /// can still ask for one.
    pub fn required(&self, trigger: Trigger, now: Instant) -> Option<FullSyncReason> {
        if trigger.wants_full_sync() {
            return Some(FullSyncReason::Asked(trigger));
        }
        if self.last_failed {
            return Some(FullSyncReason::LastFailed);
        }
        match self.last_full {
            None => Some(FullSyncReason::NoneYet),
            Some(at) if now.saturating_duration_since(at) >= self.sync_period => {
                Some(FullSyncReason::SyncPeriodElapsed)
            }
            Some(_) => None,
        }
    }

    /// Decides the scope of a sync starting at `now`: [`Self::required`],
    /// else `state_unknown()` (the proxier's check, awaited only then).
    pub async fn decide<F, E>(
        &self,
        trigger: Trigger,
        now: Instant,
        state_unknown: impl FnOnce() -> F,
    ) -> Result<SyncScope, E>
    where
        F: Future<Output = Result<bool, E>>,
    {
        if let Some(reason) = self.required(trigger, now) {
            return Ok(SyncScope::Full(reason));
        }
        if state_unknown().await? {
            return Ok(SyncScope::Full(FullSyncReason::StateUnknown));
        }
        Ok(SyncScope::Partial)
    }

    /// Records how a sync ended at `finished`: whether it succeeded and
    /// whether it was a full one (as the proxier reports it did).
    pub fn record(&mut self, succeeded: bool, full: bool, finished: Instant) {
        self.last_failed = !succeeded;
        if succeeded && full {
            self.last_full = Some(finished);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const PERIOD: Duration = Duration::from_secs(30);

    fn decide(policy: &FullSyncPolicy, trigger: Trigger, now: Instant, unknown: bool) -> SyncScope {
        let fut = policy.decide(trigger, now, || async move { Ok::<_, ()>(unknown) });
        block_on(fut).unwrap()
    }

    /// Runs a future that never waits (the policy's, with a ready check).
    fn block_on<T>(fut: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(fut)
    }

    fn after_full_sync(at: Instant) -> FullSyncPolicy {
        let mut policy = FullSyncPolicy::new(PERIOD);
        policy.record(true, true, at);
        policy
    }

    #[test]
    fn the_first_sync_is_full_even_when_only_requested() {
        let policy = FullSyncPolicy::new(PERIOD);
        let now = Instant::now();
        assert_eq!(
            decide(&policy, Trigger::Requested, now, false),
            SyncScope::Full(FullSyncReason::NoneYet)
        );
    }

    #[test]
    fn initial_periodic_and_retry_triggers_are_full() {
        let at = Instant::now();
        let policy = after_full_sync(at);
        for trigger in [Trigger::Initial, Trigger::Periodic, Trigger::Retry] {
            assert_eq!(
                decide(&policy, trigger, at, false),
                SyncScope::Full(FullSyncReason::Asked(trigger))
            );
        }
    }

    #[test]
    fn a_request_after_a_full_sync_is_partial_until_the_sync_period_passes() {
        let at = Instant::now();
        let policy = after_full_sync(at);
        assert_eq!(
            decide(
                &policy,
                Trigger::Requested,
                at + Duration::from_secs(29),
                false
            ),
            SyncScope::Partial
        );
        assert_eq!(
            decide(&policy, Trigger::Requested, at + PERIOD, false),
            SyncScope::Full(FullSyncReason::SyncPeriodElapsed)
        );
    }

    #[test]
    fn a_partial_sync_does_not_restart_the_sync_period() {
        let at = Instant::now();
        let mut policy = after_full_sync(at);
        policy.record(true, false, at + Duration::from_secs(20));
        assert!(decide(&policy, Trigger::Requested, at + PERIOD, false).is_full());
    }

    #[test]
    fn a_failure_makes_the_next_sync_full_and_a_success_clears_it() {
        let at = Instant::now();
        let mut policy = after_full_sync(at);
        policy.record(false, false, at + Duration::from_secs(1));
        let next = at + Duration::from_secs(2);
        assert_eq!(
            decide(&policy, Trigger::Requested, next, false),
            SyncScope::Full(FullSyncReason::LastFailed)
        );
        policy.record(true, true, next);
        assert_eq!(
            decide(
                &policy,
                Trigger::Requested,
                next + Duration::from_secs(1),
                false
            ),
            SyncScope::Partial
        );
    }

    #[test]
    fn an_unknown_kernel_state_makes_the_sync_full() {
        let at = Instant::now();
        let policy = after_full_sync(at);
        assert_eq!(
            decide(
                &policy,
                Trigger::Requested,
                at + Duration::from_secs(1),
                true
            ),
            SyncScope::Full(FullSyncReason::StateUnknown)
        );
    }

    #[test]
    fn the_proxier_is_asked_only_when_nothing_else_decided() {
        let at = Instant::now();
        let policy = after_full_sync(at);
        let asked = std::cell::Cell::new(0);
        let check = || {
            asked.set(asked.get() + 1);
            async { Ok::<_, ()>(false) }
        };
        block_on(policy.decide(Trigger::Periodic, at, check)).unwrap();
        assert_eq!(asked.get(), 0, "a periodic sync is full without asking");
        let check = || {
            asked.set(asked.get() + 1);
            async { Ok::<_, ()>(false) }
        };
        block_on(policy.decide(Trigger::Requested, at, check)).unwrap();
        assert_eq!(asked.get(), 1);
    }

    #[test]
    fn the_proxiers_error_is_returned() {
        let at = Instant::now();
        let policy = after_full_sync(at);
        let result =
            block_on(policy.decide(Trigger::Requested, at, || async { Err::<bool, _>("boom") }));
        assert_eq!(result, Err("boom"));
    }
}

//! The xtables lock, seen from this process. The legacy tools take
//! `/run/xtables.lock` (or `$XTABLES_LOCKFILE`) for the whole of a restore
//! and wait at most `--wait` seconds for it; the lock is the host's, shared
//! by both IP families and every program writing iptables rules.
//!
//! * Within the process the families never contend for it: every legacy
//!   tool that takes the lock runs in its [`Turn`], one at a time, so the
//!   IPv6 restore waits here (as long as IPv4's takes, without failing)
//!   rather than on the tool's bounded wait. Upstream serializes only per
//!   IP family (`runner.mu`), so at 10k services its second family can time
//!   out behind the first.
//! * Another program's lock is waited for as upstream does (iptables ≥
//!   1.6.2: `-w 5` given to the tool, no lock taken by the proxy itself):
//!   [`LockWait`], five seconds unless a caller says otherwise; a lock held
//!   longer fails the restore, and the sync is retried.
//!
//! The nft backend's tools take no lock (nf_tables transactions), so they
//! run without a turn.

use super::Backend;
use host::command::Invocation;
use tokio::sync::{Mutex, MutexGuard};

/// Upstream's `WaitSecondsValue`: how long a tool waits for another
/// program's lock.
pub const LOCK_WAIT_SECONDS: u8 = 5;

/// The environment variable iptables (≥ 1.8.6) reads the lock's path from.
pub const LOCK_FILE_VARIABLE: &str = "XTABLES_LOCKFILE";

static TURN: Mutex<()> = Mutex::const_new(());

/// This process's turn at the xtables lock; the next waits until it is
/// dropped.
pub(crate) struct Turn(#[allow(dead_code)] Option<MutexGuard<'static, ()>>);

/// Waits for the process's turn at the lock when `backend`'s tools take it
/// (legacy); nft tools get an empty turn at once.
pub(crate) async fn take_turn(backend: Backend) -> Turn {
    match backend {
        Backend::Legacy => Turn(Some(TURN.lock().await)),
        Backend::Nft => Turn(None),
    }
}

/// How the tools wait for the lock: for how long, and which file it is
/// (the tools' default, `/run/xtables.lock`, unless set: tests give a
/// private one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LockWait {
    /// Seconds a tool waits for another program's lock (`--wait`).
    pub seconds: u8,
    /// The lock file, passed to the tools as `XTABLES_LOCKFILE`.
    pub file: Option<&'static str>,
}

impl Default for LockWait {
    fn default() -> Self {
        Self { seconds: LOCK_WAIT_SECONDS, file: None }
    }
}

impl LockWait {
    /// `--wait=N`, the flag of tools that take the lock.
    pub(crate) fn flag(&self) -> String {
        format!("--wait={}", self.seconds)
    }

    /// `inv` with the lock file in its environment, when one is set.
    pub(crate) fn applied_to(&self, inv: Invocation) -> Invocation {
        match self.file {
            Some(path) => inv.with_env(LOCK_FILE_VARIABLE, path),
            None => inv,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn legacy_turns_come_one_at_a_time_nft_ones_at_once() {
        let first = take_turn(Backend::Legacy).await;
        let nft = tokio::time::timeout(Duration::from_millis(50), take_turn(Backend::Nft)).await;
        assert!(nft.is_ok(), "an nft tool waited for a legacy turn");
        let second = tokio::time::timeout(Duration::from_millis(50), take_turn(Backend::Legacy)).await;
        assert!(second.is_err(), "a second legacy turn was given while the first was held");
        drop(first);
        let third = tokio::time::timeout(Duration::from_millis(50), take_turn(Backend::Legacy)).await;
        assert!(third.is_ok(), "the turn was not given back");
    }

    #[test]
    fn the_lock_file_goes_into_the_environment_and_the_wait_into_the_flag() {
        let wait = LockWait { seconds: 2, file: Some("/tmp/kprs.lock") };
        assert_eq!(wait.flag(), "--wait=2");
        let inv = wait.applied_to(Invocation::with_args("iptables-legacy-restore", &[]));
        assert_eq!(inv.env, vec![(LOCK_FILE_VARIABLE.to_string(), "/tmp/kprs.lock".to_string())]);
        assert_eq!(LockWait::default().flag(), "--wait=5");
    }
}

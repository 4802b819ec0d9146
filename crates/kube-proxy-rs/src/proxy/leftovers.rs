//! Another mode's rules left on the node, removed only once this mode has
//! synced the family: switching between iptables and nftables mode keeps
//! the old mode's service rules in place through the new mode's start-up
//! (the initial list, the cold start), so the node never has none.
//!
//! Meanwhile both modes' rules are loaded. Their NAT chains share the
//! hooks and the priority (-100 in prerouting and output, 100 in
//! postrouting); the kernel's NAT core runs the NAT chains of a hook in
//! order and stops at the first that binds the connection, so a new
//! connection is DNATed by one mode only (the one whose chains were
//! registered last runs first: `tests/mode_switch.rs` shows it for every
//! order) and masqueraded by whichever sees the shared mark `0x4000`
//! first. Established connections keep their conntrack binding; they need
//! some NAT chain on the hook to be translated, which the old mode's
//! rules provide until the new mode's are in (without that, nftables →
//! iptables reset established NodePort connections). Before the new
//! mode's first sync its rules are not there and the old mode's serve
//! alone, as after a restart in the same mode. The old mode's filter
//! rules see new connections after DNAT, except nftables mode's
//! `firewall-check` (`filter-prerouting`, `filter-output-pre-dnat`,
//! priority -110): stale `loadBalancerSourceRanges` could drop a source the
//! new state allows, only between the new mode's first sync and this
//! removal, which follows it at once.

use model::IpFamily;
use proxier::Cleanup;
use std::time::Instant;

/// The other modes' leftovers of one family, until removed.
pub struct Leftovers {
    family: IpFamily,
    pending: Vec<Box<dyn Cleanup + Send>>,
}

impl Leftovers {
    /// `cleanups` of the other modes, to remove for `family`.
    pub fn new(family: IpFamily, cleanups: Vec<Box<dyn Cleanup + Send>>) -> Self {
        Self { family, pending: cleanups }
    }

    /// Called after each successful sync of the family: the first time,
    /// removes the other modes' rules of the family; then nothing.
    pub async fn remove_after_first_sync(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let started = Instant::now();
        for cleanup in std::mem::take(&mut self.pending) {
            cleanup.remove_family_leftovers(self.family).await;
            tracing::debug!(family = %self.family, mode = ?cleanup.mode(), "checked for another mode's leftovers");
        }
        tracing::info!(
            family = %self.family,
            elapsed = ?started.elapsed(),
            "first sync done: other modes' leftovers removed"
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proxier::{Cleaned, LocalFuture, Mode};
    use std::sync::{Arc, Mutex};

    /// Records the families it was asked to clean.
    struct Recorder(Arc<Mutex<Vec<IpFamily>>>);

    impl Cleanup for Recorder {
        fn mode(&self) -> Mode {
            Mode::Nftables
        }
        fn clean_up(&self) -> LocalFuture<'_, Vec<Cleaned>> {
            Box::pin(async { Vec::new() })
        }
        fn remove_leftovers(&self) -> LocalFuture<'_, ()> {
            panic!("a family's removal must not remove every family")
        }
        fn remove_family_leftovers(&self, family: IpFamily) -> LocalFuture<'_, ()> {
            self.0.lock().unwrap().push(family);
            Box::pin(async {})
        }
    }

    #[test]
    fn removes_the_familys_leftovers_after_the_first_sync_only() {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let mut leftovers = Leftovers::new(IpFamily::V6, vec![Box::new(Recorder(Arc::clone(&calls)))]);
        futures::executor::block_on(leftovers.remove_after_first_sync());
        futures::executor::block_on(leftovers.remove_after_first_sync());
        assert_eq!(*calls.lock().unwrap(), vec![IpFamily::V6]);
    }

    #[test]
    fn each_mode_defers_the_other_modes_removal() {
        let modes = |mode| super::super::mode::deferred_leftovers(mode, None).iter().map(|c| c.mode()).collect::<Vec<_>>();
        assert_eq!(modes(Mode::Nftables), vec![Mode::Iptables]);
        assert_eq!(modes(Mode::Iptables), vec![Mode::Nftables]);
        assert!(modes(Mode::Ipvs).is_empty());
        assert_eq!(modes(Mode::Userspace), vec![Mode::Nftables]);
    }
}

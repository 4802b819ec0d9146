//! The xtables lock on a real kernel (legacy backend), in fresh network
//! namespaces and with a private lock file (`XTABLES_LOCKFILE`), so the
//! host's `/run/xtables.lock` is never taken:
//!
//! * the two IP families' full syncs of one process overlap, each restore
//!   holding the lock longer than the tools wait for it (`--wait=1` here),
//!   and neither fails: the second waits for the process's turn;
//! * another program holding the lock for a while (shorter than the wait)
//!   delays the sync, which then succeeds; held past the wait, the sync
//!   fails naming the lock, and the previous rules stay.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "apply_support/support.rs"]
mod support;

use model::IpFamily;
use nix::fcntl::{Flock, FlockArg};
use std::path::Path;
use std::time::{Duration, Instant};
use support::*;
use xtables::apply::{Backend, Iptables, LockWait, Syncer};
use xtables::{Rule, Ruleset, Table, Target};

/// Services of the big rulesets: enough that one legacy restore of them
/// holds the lock for longer than [`SHORT_WAIT`].
const SERVICES: usize = 6000;
/// Endpoints per service.
const ENDPOINTS: usize = 10;
/// The tools' wait for the lock in these tests, in seconds.
const SHORT_WAIT: u8 = 1;

/// A private lock file for one test (leaked: the tools' settings are `'static`).
fn private_lock(dir: &Path) -> &'static str {
    let path = dir.join("xtables.lock");
    std::fs::write(&path, "").expect("create the private lock file");
    Box::leak(path.to_string_lossy().into_owned().into_boxed_str())
}

fn tools(family: IpFamily, lock: &'static str, seconds: u8) -> Iptables {
    Iptables::new(Backend::Legacy, family).with_lock_wait(LockWait { seconds, file: Some(lock) })
}

/// `services` ClusterIP services of `family` with [`ENDPOINTS`] endpoints
/// each, in upstream's shape (the base chains and jumps of `support`).
fn big_ruleset(family: IpFamily, services: usize) -> Ruleset {
    let mut ruleset = ruleset(family, &[]);
    for i in 0..services {
        add_service(&mut ruleset, family, i);
    }
    ruleset
}

fn add_service(ruleset: &mut Ruleset, family: IpFamily, i: usize) {
    let (hi, lo) = (i >> 8, i & 255);
    let (cluster_ip, bits) = match family {
        IpFamily::V4 => (format!("172.30.{hi}.{lo}"), 32),
        IpFamily::V6 => (format!("fd00:172:30::{hi:x}:{lo:x}"), 128),
    };
    let svc = format!("KUBE-SVC-{i:0>16}");
    let comment = format!("bench/svc-{i}:http");
    let nat = &mut ruleset.nat;
    nat.rules.push(Rule::new("KUBE-SERVICES").dst(&format!("{cluster_ip}/{bits}")).comment(&comment).dport("tcp", 80).jump(&svc).build());
    nat.chains.push(svc.clone());
    for e in 0..ENDPOINTS {
        let sep = format!("KUBE-SEP-{:0>16}", i * ENDPOINTS + e);
        let (pod, dnat) = match family {
            IpFamily::V4 => (format!("10.{}.{hi}.{lo}", 128 + e), format!("10.{}.{hi}.{lo}:8080", 128 + e)),
            IpFamily::V6 => (format!("fd00:10:{e:x}::{hi:x}:{lo:x}"), format!("[fd00:10:{e:x}::{hi:x}:{lo:x}]:8080")),
        };
        let left = ENDPOINTS - e;
        let rule = Rule::new(&svc).comment(&comment);
        let rule = if left > 1 { rule.matching(&format!("-m statistic --mode random --probability {:.11}", 1.0 / left as f64)) } else { rule };
        nat.rules.push(rule.jump(&sep).build());
        nat.rules.push(Rule::new(&sep).src(&format!("{pod}/{bits}")).comment(&comment).jump("KUBE-MARK-MASQ").build());
        nat.rules.push(Rule::new(&sep).proto("tcp").comment(&comment).matching("-m tcp").target(Target::Dnat(dnat.parse().unwrap())).build());
        nat.chains.push(sep);
    }
}

/// Our chains in `table` of `family`'s legacy tables.
fn our_chains(family: IpFamily, table: Table) -> usize {
    let save = if family == IpFamily::V4 { "iptables-legacy-save" } else { "ip6tables-legacy-save" };
    let saved = sh(save, &["-t", table.as_str()]);
    saved.lines().filter(|l| l.starts_with(":KUBE-")).count()
}

#[test]
fn both_families_restores_overlap_and_neither_fails() {
    let dir = tempfile::tempdir().unwrap();
    let lock = private_lock(dir.path());
    in_netns("lock-families", move || async move {
        let (v4, v6) = (big_ruleset(IpFamily::V4, SERVICES), big_ruleset(IpFamily::V6, SERVICES));
        // One family alone: its restore must hold the lock past the wait, or
        // this test shows nothing.
        let mut alone = Syncer::new(tools(IpFamily::V4, lock, SHORT_WAIT));
        let started = Instant::now();
        alone.sync(&v4, true).await.expect("one family alone");
        let one = started.elapsed();
        tools(IpFamily::V4, lock, SHORT_WAIT).apply_cleanup().await.expect("cleanup");
        assert!(one > Duration::from_secs(SHORT_WAIT as u64 + 1), "a sync of {SERVICES} services took {one:?}: too short to overlap past the wait");

        let mut four = Syncer::new(tools(IpFamily::V4, lock, SHORT_WAIT));
        let mut six = Syncer::new(tools(IpFamily::V6, lock, SHORT_WAIT));
        let started = Instant::now();
        let (a, b) = tokio::join!(four.sync(&v4, true), six.sync(&v6, true));
        let both = started.elapsed();
        a.expect("IPv4's sync beside IPv6's");
        b.expect("IPv6's sync beside IPv4's");
        assert!(both > one, "the two syncs ({both:?}) took no longer than one ({one:?}): they did not overlap");
        for family in [IpFamily::V4, IpFamily::V6] {
            assert_eq!(our_chains(family, Table::Nat), 4 + SERVICES * (1 + ENDPOINTS), "{family:?} nat chains");
        }
    });
}

/// Takes `lock` as another program would, for `hold`, on a thread.
fn hold_lock(lock: &'static str, hold: Duration) -> std::thread::JoinHandle<()> {
    let file = std::fs::File::open(lock).expect("open the lock file");
    let held = Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, e)| e).expect("take the lock");
    std::thread::spawn(move || {
        std::thread::sleep(hold);
        drop(held);
    })
}

#[test]
fn another_programs_lock_is_waited_for_then_the_sync_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let lock = private_lock(dir.path());
    in_netns("lock-other", move || async move {
        let small = ruleset(IpFamily::V4, &["web", "db"]);
        let mut syncer = Syncer::new(tools(IpFamily::V4, lock, 5));
        let holder = hold_lock(lock, Duration::from_secs(2));
        let started = Instant::now();
        let synced = syncer.sync(&small, true).await;
        let waited = started.elapsed();
        holder.join().unwrap();
        synced.expect("a sync behind a lock held 2 s of a 5 s wait");
        assert!(waited >= Duration::from_millis(1900), "the sync did not wait for the lock ({waited:?})");
        assert_eq!(our_chains(IpFamily::V4, Table::Nat), 4 + 2 * 3);

        // Held past the wait: the sync fails naming the lock, the rules stay.
        let mut impatient = Syncer::new(tools(IpFamily::V4, lock, SHORT_WAIT));
        let holder = hold_lock(lock, Duration::from_secs(3));
        let err = impatient.sync(&ruleset(IpFamily::V4, &["web"]), true).await.expect_err("a lock held past the wait");
        holder.join().unwrap();
        let text = err.to_string();
        assert!(text.contains(lock) && text.contains("xtables lock"), "{text}");
        assert_eq!(our_chains(IpFamily::V4, Table::Nat), 4 + 2 * 3, "the previous rules stay");
    });
}

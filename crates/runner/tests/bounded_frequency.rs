//! The runner's timing contract, checked under paused tokio time: minimum
//! interval, periodic resync, coalescing, failure backoff, the start-up gate
//! and the health timestamps.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use runner::{Handle, Periods, Runner, Trigger};
use tokio::time::{Instant, sleep};

type Log = Arc<Mutex<Vec<(Duration, Trigger)>>>;

/// Starts a runner whose sync records (time since start, trigger), takes
/// `work` to run and fails the first `failures` times.
fn start(min: u64, max: u64, work: Duration, failures: usize) -> (Handle, Log, Instant) {
    let t0 = Instant::now();
    let log: Log = Arc::default();
    let left = Arc::new(Mutex::new(failures));
    let sync_log = Arc::clone(&log);
    let periods = Periods::new(Duration::from_millis(min), Duration::from_millis(max)).unwrap();
    let (runner, handle) = Runner::new("test", periods, move |trigger| {
        let log = Arc::clone(&sync_log);
        let left = Arc::clone(&left);
        async move {
            log.lock().unwrap().push((t0.elapsed(), trigger));
            sleep(work).await;
            let mut left = left.lock().unwrap();
            if *left > 0 {
                *left -= 1;
                return Err("iptables-restore failed");
            }
            Ok(())
        }
    });
    runner.spawn();
    (handle, log, t0)
}

fn times(log: &Log) -> Vec<u128> {
    log.lock()
        .unwrap()
        .iter()
        .map(|(t, _)| t.as_millis())
        .collect()
}

fn triggers(log: &Log) -> Vec<Trigger> {
    log.lock().unwrap().iter().map(|(_, t)| *t).collect()
}

#[tokio::test(start_paused = true)]
async fn nothing_runs_before_ready_then_one_sync_at_once() {
    let (handle, log, _) = start(1_000, 30_000, Duration::ZERO, 0);
    for _ in 0..5 {
        handle.run();
        sleep(Duration::from_secs(600)).await;
    }
    assert!(
        log.lock().unwrap().is_empty(),
        "synced before ready: {:?}",
        times(&log)
    );
    assert!(handle.status().oldest_pending.is_some());
    handle.ready();
    sleep(Duration::from_millis(1)).await;
    assert_eq!(times(&log), vec![3_000_000]);
    assert_eq!(triggers(&log), vec![Trigger::Initial]);
    assert_eq!(
        handle.status().oldest_pending,
        None,
        "the initial sync covers earlier requests"
    );
}

#[tokio::test(start_paused = true)]
async fn requests_never_start_syncs_closer_than_min_interval() {
    let (handle, log, _) = start(1_000, 30_000, Duration::ZERO, 0);
    handle.ready();
    for _ in 0..49 {
        sleep(Duration::from_millis(100)).await;
        handle.run();
    }
    sleep(Duration::from_millis(600)).await;
    assert_eq!(times(&log), vec![0, 1_000, 2_000, 3_000, 4_000, 5_000]);
    let t = triggers(&log);
    assert_eq!(t[0], Trigger::Initial);
    assert!(t[1..].iter().all(|t| *t == Trigger::Requested), "{t:?}");
}

#[tokio::test(start_paused = true)]
async fn a_request_after_a_quiet_spell_runs_at_once() {
    let (handle, log, _) = start(1_000, 30_000, Duration::ZERO, 0);
    handle.ready();
    sleep(Duration::from_millis(5_000)).await;
    handle.run();
    sleep(Duration::from_millis(1)).await;
    assert_eq!(times(&log), vec![0, 5_000]);
}

#[tokio::test(start_paused = true)]
async fn syncs_at_least_every_max_interval_without_requests() {
    let (handle, log, _) = start(1_000, 30_000, Duration::ZERO, 0);
    handle.ready();
    sleep(Duration::from_millis(95_000)).await;
    assert_eq!(times(&log), vec![0, 30_000, 60_000, 90_000]);
    assert_eq!(
        triggers(&log),
        vec![
            Trigger::Initial,
            Trigger::Periodic,
            Trigger::Periodic,
            Trigger::Periodic
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn max_interval_counts_from_the_last_sync_of_any_kind() {
    let (handle, log, _) = start(1_000, 30_000, Duration::ZERO, 0);
    handle.ready();
    sleep(Duration::from_millis(20_000)).await;
    handle.run();
    sleep(Duration::from_millis(45_000)).await;
    assert_eq!(times(&log), vec![0, 20_000, 50_000]);
}

#[tokio::test(start_paused = true)]
async fn many_requests_coalesce_into_one_sync() {
    let (handle, log, _) = start(1_000, 30_000, Duration::ZERO, 0);
    handle.ready();
    sleep(Duration::from_millis(500)).await;
    for _ in 0..100 {
        handle.run();
    }
    sleep(Duration::from_millis(2_500)).await;
    assert_eq!(times(&log), vec![0, 1_000]);
    assert_eq!(handle.status().syncs, 2);
}

#[tokio::test(start_paused = true)]
async fn a_request_during_a_sync_gets_its_own_sync() {
    let (handle, log, t0) = start(1_000, 30_000, Duration::from_millis(300), 0);
    handle.ready();
    sleep(Duration::from_millis(100)).await;
    handle.run();
    let queued = handle.status().last_queued.unwrap();
    sleep(Duration::from_millis(250)).await;
    let st = handle.status();
    assert_eq!(
        st.last_sync.map(|s| s - t0),
        Some(Duration::from_millis(300))
    );
    assert_eq!(
        st.oldest_pending,
        Some(queued),
        "queued during the sync: still pending"
    );
    sleep(Duration::from_millis(1_000)).await;
    assert_eq!(times(&log), vec![0, 1_000]);
    assert_eq!(handle.status().oldest_pending, None);
}

#[tokio::test(start_paused = true)]
async fn failures_back_off_exponentially_up_to_max_interval() {
    let (handle, log, _) = start(100, 10_000, Duration::ZERO, 5);
    handle.ready();
    sleep(Duration::from_millis(1_500)).await;
    assert_eq!(handle.status().consecutive_failures, 2);
    handle.run(); // a request does not cut the backoff short
    sleep(Duration::from_millis(30_000)).await;
    // Fail at 0, retry after 1s, 2s, 4s, 8s, then capped at 10s: success.
    assert_eq!(times(&log), vec![0, 1_000, 3_000, 7_000, 15_000, 25_000]);
    assert_eq!(
        triggers(&log),
        vec![
            Trigger::Initial,
            Trigger::Retry,
            Trigger::Retry,
            Trigger::Retry,
            Trigger::Retry,
            Trigger::Retry
        ]
    );
    let st = handle.status();
    assert_eq!(st.consecutive_failures, 0);
    assert_eq!(st.oldest_pending, None);
    sleep(Duration::from_millis(10_000)).await;
    assert_eq!(
        times(&log).last(),
        Some(&35_000),
        "periodic again after success"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_sync_keeps_requests_pending() {
    let (handle, _log, t0) = start(100, 10_000, Duration::ZERO, 1);
    handle.run();
    handle.ready();
    sleep(Duration::from_millis(10)).await;
    let st = handle.status();
    assert_eq!(st.consecutive_failures, 1);
    assert_eq!(st.oldest_pending.map(|p| p - t0), Some(Duration::ZERO));
    assert_eq!(st.last_sync, None);
    sleep(Duration::from_millis(1_000)).await;
    let st = handle.status();
    assert_eq!(st.oldest_pending, None);
    assert_eq!(
        st.last_sync.map(|s| s - t0),
        Some(Duration::from_millis(1_000))
    );
}

#[tokio::test(start_paused = true)]
async fn zero_min_interval_syncs_every_request() {
    let (handle, log, _) = start(0, 30_000, Duration::ZERO, 0);
    handle.ready();
    for _ in 0..3 {
        sleep(Duration::from_millis(10)).await;
        handle.run();
    }
    sleep(Duration::from_millis(10)).await;
    assert_eq!(times(&log), vec![0, 10, 20, 30]);
}

#[tokio::test(start_paused = true)]
async fn stop_ends_the_loop() {
    let t0 = Instant::now();
    let periods = Periods::new(Duration::from_secs(1), Duration::from_secs(30)).unwrap();
    let (runner, handle) = Runner::new("test", periods, |_| async { Ok::<(), String>(()) });
    let task = runner.spawn();
    handle.ready();
    sleep(Duration::from_millis(10)).await;
    handle.stop();
    task.await.unwrap();
    assert_eq!(handle.status().syncs, 1);
    assert!(t0.elapsed() < Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn stop_before_ready_runs_nothing() {
    let periods = Periods::new(Duration::from_secs(1), Duration::from_secs(30)).unwrap();
    let (runner, handle) = Runner::new("test", periods, |_| async { Ok::<(), String>(()) });
    let task = runner.spawn();
    handle.run();
    handle.stop();
    task.await.unwrap();
    assert_eq!(handle.status().syncs, 0);
}

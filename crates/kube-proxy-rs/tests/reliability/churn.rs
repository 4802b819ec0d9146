//! Churn: EndpointSlice updates at rate against many services, through the
//! fake API server or through the manifests file, with probes running to
//! the healthy services. Shows the rules end up exactly at the final state
//! (checked once, after the proxy has gone quiet), how long after the last
//! change the last sync ended (from the proxy's own log timestamps), the
//! proxy's RSS over time, and that no probe to a healthy service failed.

use crate::api::ApiServer;
use crate::bed::{Bed, Launch, Mode, Source, synced_line};
use crate::fake_api::Kind;
use crate::figures::print;
use crate::observe::{RssSeries, log_time, seconds_between};
use crate::probes::Prober;
use crate::proxy::Proxy;
use crate::size::Size;
use crate::state::{CLIENT_POD, ClusterState, PORT};
use std::collections::BTreeSet;
use std::time::{Duration, Instant, SystemTime};

/// Where the updates go in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// One API `apply` per update (each a watch event).
    Api,
    /// The manifests file rewritten every [`FILE_WRITE_EVERY`] with the
    /// updates due by then.
    Manifests,
}

/// How often the manifests file is rewritten during churn.
const FILE_WRITE_EVERY: Duration = Duration::from_millis(100);
/// How long to wait for the first rules of a few hundred services.
const FIRST_RULES: Duration = Duration::from_secs(20);

/// Runs one churn scenario and checks it.
pub fn run(scenario: &str, mode: Mode, via: Via) {
    let quiet = if via == Via::Api { Duration::from_secs(3) } else { Duration::from_secs(4) };
    run_sized(scenario, mode, via, Size::from_env(), quiet);
}

/// [`run`] at `size`, the rules checked once the proxy logged no sync for
/// `quiet` (longer than one sync takes).
pub fn run_sized(scenario: &str, mode: Mode, via: Via, size: Size, quiet: Duration) {
    let bed = Bed::build();
    let mut state = ClusterState::new(size.services);
    bed.write(&state);
    let api = (via == Via::Api).then(|| ApiServer::start_in(bed.node()));
    if let Some(api) = &api {
        state.objects().into_iter().for_each(|(kind, object)| api.apply(kind, object));
    }
    let source = api.as_ref().map_or(Source::Manifests, |a| Source::Api(a.url()));
    let mut proxy = bed.start_proxy(&Launch::new(mode, source));
    proxy.wait_for(synced_line(mode));
    bed.wait_for_rules(mode, &state, FIRST_RULES);

    let prober = Prober::start(&bed.client_netns(), CLIENT_POD.1, state.healthy_addresses());
    let mut rss = RssSeries::default();
    let (updates, last_change, seen) = churn(&size, &mut state, api.as_ref(), &bed, &mut proxy, &mut rss);
    let (last_sync, syncs, took) = wait_until_quiet(&mut proxy, mode, quiet, seen);
    if bed.rules_endpoints(mode) != state.expected() {
        let log = proxy.drain_all();
        let tail = log.iter().rev().take(12).rev().cloned().collect::<Vec<_>>().join("\n");
        println!("[reliability] {scenario}: the proxy's last log lines:\n{tail}");
    }
    bed.assert_rules(mode, &state);
    if mode == Mode::Ipvs {
        // every service has its virtual server, with endpoints or without
        let want: BTreeSet<String> = state.services.iter().map(|s| format!("{}:{PORT}", s.cluster_ip)).collect();
        assert_eq!(crate::observe::ipvs_virtual_servers(&bed.ipvs_table()), want, "the virtual servers differ from the final state");
    }
    let tally = prober.finish();

    let converged = seconds_between(last_change, last_sync);
    print(scenario, "load", format!("{} ({updates} updates sent)", size.describe()));
    let figure = format!("{converged:.3} ({syncs} syncs after the churn, the last one {took})");
    print(scenario, "last change → last sync ended (s, periodic resyncs left out)", figure);
    print(scenario, "RSS", rss.summary());
    print(scenario, "probes to healthy services", &tally);
    if mode == Mode::Ipvs {
        print(scenario, "real servers left drained (weight 0)", crate::observe::ipvs_drained(&bed.ipvs_table()));
    }
    assert!(converged >= 0.0, "no sync ended after the last change ({converged:.3} s)");
    assert_eq!(tally.failed, 0, "connections to healthy, unchanged services failed during churn: {tally}");
    let bound = 2 * rss.first() + 32 * 1024;
    assert!(rss.peak() <= bound, "RSS grew without bound: {}", rss.summary());
}

/// Sends updates at `size.rate` for `size.churn`; returns how many, when
/// the last one went in and when the last sync seen meanwhile ended.
fn churn(
    size: &Size,
    state: &mut ClusterState,
    api: Option<&ApiServer>,
    bed: &Bed,
    proxy: &mut Proxy,
    rss: &mut RssSeries,
) -> (u64, SystemTime, SystemTime) {
    let start = Instant::now();
    let (mut updates, mut last_change, mut next_sample) = (0u64, SystemTime::now(), 0.0);
    let mut last_sync = SystemTime::UNIX_EPOCH;
    while start.elapsed() < size.churn {
        let now = start.elapsed().as_secs_f64();
        let due = (f64::from(size.rate) * now) as u64;
        if updates < due {
            for _ in updates..due {
                let i = state.churn_one();
                if let Some(api) = api {
                    api.apply(Kind::EndpointSlices, state.slice(i));
                }
            }
            if api.is_none() {
                bed.write(state);
            }
            updates = due;
            last_change = SystemTime::now();
        }
        if now >= next_sample {
            rss.sample(now, proxy.pid());
            next_sample += 1.0;
        }
        let lines = proxy.drain();
        let change_syncs = lines.iter().filter(|l| l.contains("synced ") && l.contains("ip_family=IPv4") && !l.contains("trigger=Periodic"));
        if let Some(t) = change_syncs.filter_map(|l| log_time(l)).next_back() {
            last_sync = t;
        }
        std::thread::sleep(if api.is_some() { Duration::from_millis(5) } else { FILE_WRITE_EVERY });
    }
    rss.sample(start.elapsed().as_secs_f64(), proxy.pid());
    (updates, last_change, last_sync)
}

/// Waits until the proxy logged no sync for `quiet`; returns when the
/// last sync not started by the resync timer ended (`seen`: the last one
/// before the wait), how many syncs came in the wait and the figures of
/// that last one.
fn wait_until_quiet(proxy: &mut Proxy, mode: Mode, quiet: Duration, seen: SystemTime) -> (SystemTime, usize, String) {
    let (mut last, mut count, mut since, mut took) = (seen, 0, Instant::now(), String::new());
    let deadline = Instant::now() + Duration::from_secs(60);
    while since.elapsed() < quiet {
        assert!(Instant::now() < deadline, "the proxy never went quiet after the churn");
        for line in proxy.drain().into_iter().filter(|l| l.contains(synced_line(mode))) {
            count += 1;
            since = Instant::now();
            // The timer's resync (a full sync every sync period) carries no change.
            if line.contains("trigger=Periodic") {
                continue;
            }
            last = log_time(&line).unwrap_or_else(|| panic!("no timestamp on {line:?}"));
            took = sync_figures(&line);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (last, count, took)
}

/// `render_ms=… apply_ms=… partial=…` of a sync line.
fn sync_figures(line: &str) -> String {
    let wanted = ["partial=", "render_ms=", "apply_ms="];
    line.split_whitespace().filter(|w| wanted.iter().any(|p| w.starts_with(p))).collect::<Vec<_>>().join(" ")
}

//! The API server gone for a while and back: the rules stay while it is
//! away (periodic syncs included); an EndpointSlice deleted meanwhile
//! without any watch hearing of it (history compacted: resuming watches
//! get 410 Gone) is found by the re-list; while the EndpointSlice re-list
//! is held back (Services already re-listed) no sync may lose an
//! endpoint; once it completes, the deleted slice's endpoints go.

use super::{Steady, periods, wait_until};
use crate::api::ApiServer;
use crate::bed::{Bed, Launch, Mode, Source, synced_line};
use crate::fake_api::Kind;
use crate::figures::print;
use crate::size::Size;
use crate::state::{ClusterState, HEALTHY, NAMESPACE};
use std::time::{Duration, Instant};

const SCENARIO: &str = "API server gone and back (iptables)";
/// How long a watcher may take to reconnect after a long outage: its
/// retry delay grows to 30 s, stretched by up to 100 % jitter (client-go's).
const RECONNECT: Duration = Duration::from_secs(65);
/// How long the EndpointSlice re-list is held after the Services one.
const HELD: Duration = Duration::from_secs(3);

/// Runs the scenario.
pub fn run() {
    let size = Size::from_env();
    let bed = Bed::build();
    let mut state = ClusterState::new(super::CHURNED);
    let mut api = ApiServer::start_in(bed.node());
    state.objects().into_iter().for_each(|(kind, object)| api.apply(kind, object));
    let launch = Launch::new(Mode::Iptables, Source::Api(api.url())).with(&periods());
    let mut s = Steady::start(bed, state.clone(), launch);
    let before = s.state.expected();

    api.stop();
    let syncs_while_down = stay_away(&mut s, size.api_down);
    let down = s.prober.take();
    print(SCENARIO, &format!("away {} s: syncs meanwhile", size.api_down.as_secs()), syncs_while_down);
    print(SCENARIO, "probes while away", &down);
    assert_eq!(s.bed.rules_endpoints(Mode::Iptables), before, "rules changed while the API server was away");

    let gone = &state.services[HEALTHY];
    assert!(!gone.endpoints.is_empty(), "the slice to delete has endpoints");
    api.delete_unannounced(Kind::EndpointSlices, NAMESPACE, &format!("{}-1", gone.name));
    state.services[HEALTHY].endpoints.clear();
    let (services_listed, slices_listed) = (api.lists(Kind::Services), api.lists(Kind::EndpointSlices));
    api.hold_lists(Kind::EndpointSlices);
    api.start();
    let relisted = wait_until("Services re-listed", RECONNECT, || api.lists(Kind::Services) > services_listed);
    let what = "back → Services re-listed after (s: the connection retry delay, ≤ 30 s + jitter as client-go)";
    print(SCENARIO, what, format!("{:.1}", relisted.as_secs_f64()));
    wait_until("EndpointSlices re-list asked", RECONNECT, || {
        api.lists(Kind::EndpointSlices) > slices_listed
    });
    let held_from = Instant::now();
    let mut syncs_held = Vec::new();
    while held_from.elapsed() < HELD {
        let lines = s.proxy.drain();
        syncs_held.extend(lines.iter().filter(|l| l.contains(synced_line(Mode::Iptables))).filter_map(|l| trigger(l)));
        assert_eq!(s.bed.rules_endpoints(Mode::Iptables), before, "a sync on a partial cache changed the rules");
        std::thread::sleep(Duration::from_millis(200));
    }
    print(SCENARIO, "syncs while the EndpointSlice re-list was held (triggers)", format!("{syncs_held:?}"));

    api.release_lists(Kind::EndpointSlices);
    s.state = state;
    let applied = s.wait_for_rules(Duration::from_secs(20));
    let what = "re-list released → deleted slice's endpoints gone after (s)";
    print(SCENARIO, what, format!("{:.2}", applied.as_secs_f64()));
    let back = s.prober.take();
    print(SCENARIO, "probes after it came back", &back);
    assert_eq!(down.failed + back.failed, 0, "connections to healthy services failed: {down} / {back}");
}

/// Waits `away` with the API server gone; how many syncs the proxy did.
fn stay_away(s: &mut Steady, away: Duration) -> usize {
    let start = Instant::now();
    let mut syncs = 0;
    while start.elapsed() < away {
        syncs += s.proxy.drain().iter().filter(|l| l.contains(synced_line(Mode::Iptables))).count();
        std::thread::sleep(Duration::from_millis(200));
    }
    syncs
}

/// The `trigger=` of a sync line.
fn trigger(line: &str) -> Option<String> {
    line.split_whitespace().find_map(|w| w.strip_prefix("trigger=")).map(str::to_string)
}

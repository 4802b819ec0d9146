//! The API client's clientConnection settings against a fake API server:
//! qps/burst space requests out; a negative qps turns the limit off.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "kube/fake_api.rs"]
mod fake_api;

use fake_api::{FakeApi, Kind};
use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::ListParams;
use source::kube::ClientSettings;
use std::time::{Duration, Instant};

fn services(api: &FakeApi, qps: f32, burst: u32) -> Api<Service> {
    let config = kube::Config::new(api.url().parse().unwrap());
    let settings = ClientSettings {
        qps,
        burst,
        // Upstream's default; logged and JSON used instead.
        content_type: "application/vnd.kubernetes.protobuf".into(),
        ..ClientSettings::default()
    };
    Api::all(source::kube::client_from_config(config, &settings).unwrap())
}

async fn list_n(services: &Api<Service>, n: usize) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        services.list(&ListParams::default()).await.unwrap();
    }
    start.elapsed()
}

#[tokio::test]
async fn qps_and_burst_space_requests_out() {
    let api = FakeApi::start_new().await;
    let services = services(&api, 20.0, 2);
    // 2 at once, then 4 more at 20 per second: at least 200 ms.
    let elapsed = list_n(&services, 6).await;
    assert!(elapsed >= Duration::from_millis(190), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    assert_eq!(api.lists(Kind::Services), 6);

    // The bucket refills up to the burst while idle.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let elapsed = list_n(&services, 2).await;
    assert!(elapsed < Duration::from_millis(40), "{elapsed:?}");
}

#[tokio::test]
async fn negative_qps_turns_the_limit_off() {
    let api = FakeApi::start_new().await;
    // With upstream's defaults (5 qps, burst 10) these would take 4 s.
    let elapsed = list_n(&services(&api, -1.0, 0), 30).await;
    assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}");
    assert_eq!(api.lists(Kind::Services), 30);
}

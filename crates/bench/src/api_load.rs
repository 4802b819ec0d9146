//! `api-load` and `api-change`: the benchmark's load put into a real API
//! server (namespace `bench`, the same Services, EndpointSlices and Node as
//! `gen` writes), with parallel POSTs, and one endpoint changed there, so
//! proxies watching that server (ours and upstream's) can be timed side by
//! side from their own `/metrics`.

use crate::generate::{self, Load};
use anyhow::{Context, Result, anyhow};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{Namespace, Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde::de::DeserializeOwned;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The namespace every generated object lives in.
pub const NAMESPACE: &str = "bench";
/// The annotation upstream's network-programming latency counts from.
const TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// The address service 0's first endpoint takes when `api-change` moves it
/// (and gives back on the next call): outside every generated endpoint.
const MOVED_ADDRESS: &str = "10.191.255.254";

/// A client for the cluster of `kubeconfig`.
pub async fn client(kubeconfig: &Path) -> Result<Client> {
    let file = Kubeconfig::read_from(kubeconfig).with_context(|| format!("reading {}", kubeconfig.display()))?;
    let config = Config::from_custom_kubeconfig(file, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

/// Creates namespace `bench`, the Node and `load`'s Services and
/// EndpointSlices, `parallel` requests at a time; objects that already
/// exist are left as they are. Returns a one-line summary.
pub async fn run_load(client: Client, load: &Load, parallel: usize) -> Result<String> {
    let started = Instant::now();
    create(&Api::<Namespace>::all(client.clone()), parse(&format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NAMESPACE}\n"))?).await?;
    create(&Api::<Node>::all(client.clone()), parse(&generate::node_document())?).await?;
    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
    let slices: Api<EndpointSlice> = Api::namespaced(client, NAMESPACE);
    let created = stream::iter(0..load.services)
        .map(|i| create_service(&services, &slices, load, i))
        .buffer_unordered(parallel.max(1))
        .try_fold(0usize, |n, made| async move { Ok(n + made) })
        .await?;
    let took = started.elapsed();
    let listed = (services.list_metadata(&ListParams::default()).await?.items.len(), slices.list_metadata(&ListParams::default()).await?.items.len());
    Ok(format!(
        "loaded {} services x {} endpoints into namespace {NAMESPACE} ({created} objects created, the rest already there) in {:.1} s; \
         the namespace now holds {} Services and {} EndpointSlices; node {}",
        load.services,
        load.endpoints,
        took.as_secs_f64(),
        listed.0,
        listed.1,
        generate::NODE
    ))
}

/// Service `i` and its slice; the number of objects created.
async fn create_service(services: &Api<Service>, slices: &Api<EndpointSlice>, load: &Load, i: usize) -> Result<usize> {
    let text = generate::service_documents(load, i, load.endpoints);
    let mut docs = text.split("---\n").filter(|d| !d.trim().is_empty());
    let (service, slice) = (docs.next(), docs.next());
    let (Some(service), Some(slice)) = (service, slice) else {
        return Err(anyhow!("generated documents of service {i} are not a Service and a slice"));
    };
    Ok(create(services, parse(service)?).await? as usize + create(slices, parse(slice)?).await? as usize)
}

/// POSTs `object`; `false` when it already exists.
async fn create<K>(api: &Api<K>, object: K) -> Result<bool>
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(err) => Err(err).with_context(|| format!("creating {:?}", object.meta().name)),
    }
}

fn parse<T: DeserializeOwned>(yaml: &str) -> Result<T> {
    serde_saphyr::from_str(yaml).with_context(|| format!("generated document does not decode:\n{yaml}"))
}

/// Moves service 0's first endpoint to [`MOVED_ADDRESS`] (or back), with
/// the trigger-time annotation set to now; returns a line with the
/// change's wall-clock time (Unix seconds) and how long the PUT took.
pub async fn run_change(client: Client) -> Result<String> {
    let slices: Api<EndpointSlice> = Api::namespaced(client, NAMESPACE);
    let name = "svc-0-0";
    let mut slice = slices.get(name).await.with_context(|| format!("getting EndpointSlice {NAMESPACE}/{name}"))?;
    let endpoint = slice.endpoints.iter_mut().flatten().next().context("EndpointSlice svc-0-0 has no endpoints")?;
    let address = endpoint.addresses.first_mut().context("endpoint 0 of svc-0-0 has no address")?;
    let before = address.clone();
    *address = if before == MOVED_ADDRESS { original_address() } else { MOVED_ADDRESS.to_string() };
    let after = address.clone();
    let at = SystemTime::now();
    let stamp = k8s_openapi::jiff::Timestamp::try_from(at).map_err(|e| anyhow!("clock: {e}"))?;
    slice.metadata.annotations.get_or_insert_default().insert(TRIGGER_TIME.into(), stamp.to_string());
    let started = Instant::now();
    slices.replace(name, &PostParams::default(), &slice).await.context("updating svc-0-0")?;
    let took = started.elapsed();
    let unix = at.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs_f64();
    Ok(format!("changed {NAMESPACE}/{name} endpoint 0: {before} -> {after} at {unix:.3} (request {:.1} ms)", took.as_secs_f64() * 1e3))
}

/// Service 0's first endpoint as generated.
fn original_address() -> String {
    let load = Load { services: 1, endpoints: 1, local_every: 0, nodeport_every: 0, lb_every: 0, affinity_every: 0 };
    let text = generate::service_documents(&load, 0, 1);
    let line = text.lines().find_map(|l| l.strip_prefix("- addresses: ["));
    line.and_then(|l| l.strip_suffix(']')).unwrap_or("10.128.0.0").to_string()
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn generated_documents_decode_as_api_objects() {
        let load = Load { services: 2, endpoints: 3, local_every: 3, nodeport_every: 0, lb_every: 0, affinity_every: 0 };
        let text = generate::service_documents(&load, 1, 3);
        let docs: Vec<&str> = text.split("---\n").filter(|d| !d.trim().is_empty()).collect();
        let service: Service = parse(docs[0]).expect("service");
        let slice: EndpointSlice = parse(docs[1]).expect("slice");
        assert_eq!(service.metadata.name.as_deref(), Some("svc-1"));
        assert_eq!(slice.endpoints.map_or(0, |e| e.len()), 3);
        let node: Node = parse(&generate::node_document()).expect("node");
        assert_eq!(node.metadata.name.as_deref(), Some(generate::NODE));
    }

    #[test]
    fn the_original_address_is_service_zeros_first() {
        assert_eq!(original_address(), "10.128.0.0");
    }
}

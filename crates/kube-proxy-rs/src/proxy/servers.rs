//! The node health (`--healthz-bind-address`) and metrics
//! (`--metrics-bind-address`) servers, started as upstream's `serveHealthz`
//! and `serveMetrics`: a server that cannot bind is tried again every 5 s,
//! unless `--bind-address-hard-fail` makes that failure end the proxy.

use crate::config::Config;
use health::{BoundServer, HealthError, Metrics, ProxyHealth};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

/// How long upstream waits before binding a failed server again.
const RETRY_BIND: Duration = Duration::from_secs(5);

/// Starts both servers. With `--bind-address-hard-fail`, a bind failure is
/// returned (the proxy exits with it), else logged and retried.
pub async fn start(config: &Config, health: &ProxyHealth, metrics: &Metrics) -> anyhow::Result<()> {
    if let Some(addr) = config.healthz_bind_address {
        let health = health.clone();
        let bind = move || health::bind_node_health(addr, health.clone());
        start_one("healthz", addr, config.bind_address_hard_fail, bind).await?;
    }
    if let Some(addr) = config.metrics_bind_address {
        let metrics = metrics.clone();
        let bind = move || health::bind_metrics(addr, metrics.clone());
        start_one("metrics", addr, config.bind_address_hard_fail, bind).await?;
    }
    Ok(())
}

/// Binds and serves one server; on failure returns it (`hard_fail`) or
/// keeps trying in the background.
async fn start_one<B, F>(name: &'static str, addr: SocketAddr, hard_fail: bool, bind: B) -> anyhow::Result<()>
where
    B: Fn() -> F + Send + 'static,
    F: Future<Output = Result<BoundServer, HealthError>> + Send + 'static,
{
    match bind().await {
        Ok(server) => drop(server.spawn()),
        Err(err) if hard_fail => {
            anyhow::bail!("{name} server failed: {err} (--bind-address-hard-fail makes this fatal)")
        }
        Err(err) => {
            tracing::error!(%err, %addr, retry_in = ?RETRY_BIND, "{name} server failed; will retry");
            drop(tokio::spawn(bind_until_bound(name, bind)));
        }
    }
    Ok(())
}

async fn bind_until_bound<B, F>(name: &'static str, bind: B)
where
    B: Fn() -> F,
    F: Future<Output = Result<BoundServer, HealthError>>,
{
    loop {
        tokio::time::sleep(RETRY_BIND).await;
        match bind().await {
            Ok(server) => return drop(server.spawn()),
            Err(err) => tracing::error!(%err, retry_in = ?RETRY_BIND, "{name} server failed; will retry"),
        }
    }
}

//! Connecting to the API server: which configuration to use (resolved as
//! upstream kube-proxy resolves it) and the client built from it with the
//! `clientConnection` settings.
//!
//! Resolution, in order:
//! 1. `--kubeconfig` (clientConnection.kubeconfig): that file, with the
//!    server replaced by `--master` when given;
//! 2. `--master` alone: the in-cluster credentials (service account token
//!    and CA) sent to the `--master` URL when running in a pod, else the
//!    bare URL without credentials (client-go's deferred loader does this);
//! 3. the `KUBECONFIG` environment variable (one file or a `:`-separated
//!    list, merged as kubectl merges them). Upstream kube-proxy ignores
//!    `KUBECONFIG`; we read it so that `KUBECONFIG=... kube-proxy-rs` works
//!    from a shell. In a pod it is normally unset, so nothing changes there;
//! 4. in-cluster: `KUBERNETES_SERVICE_HOST` / `KUBERNETES_SERVICE_PORT` and
//!    the mounted service account.

use super::Error;
use super::rate_limit::{Limits, RateLimitLayer};
use ::kube::config::{KubeConfigOptions, Kubeconfig};
use ::kube::{Client, Config};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The service account token kube's in-cluster loader reads.
const SERVICE_ACCOUNT_TOKEN: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// The only wire format kube speaks.
const JSON: &str = "application/json";

/// How to reach the API server: upstream's `--kubeconfig`, `--master` and
/// the config file's `clientConnection` block.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    /// `--kubeconfig` / `clientConnection.kubeconfig`; empty means unset.
    pub kubeconfig: Option<PathBuf>,
    /// `--master`: overrides the API server URL; empty means unset.
    pub master: Option<String>,
    /// `clientConnection.qps`: requests per second (client-go rules: 0
    /// means 5, negative means unlimited).
    pub qps: f32,
    /// `clientConnection.burst`: requests allowed at once (0 with qps 0
    /// means 10).
    pub burst: u32,
    /// `clientConnection.contentType`. Only JSON is spoken; anything else
    /// (upstream's default is protobuf) is logged once and JSON is used.
    pub content_type: String,
}

impl Default for ClientSettings {
    /// Upstream kube-proxy's defaults.
    fn default() -> Self {
        Self {
            kubeconfig: None,
            master: None,
            qps: 5.0,
            burst: 10,
            content_type: "application/vnd.kubernetes.protobuf".to_string(),
        }
    }
}

/// Resolves the configuration (see the module docs) and builds a client
/// with the rate limit of `settings`.
pub async fn client(settings: &ClientSettings) -> Result<Client, Error> {
    let config = config(settings).await?;
    client_from_config(config, settings)
}

/// The configuration `settings` resolve to in this process's environment.
pub async fn config(settings: &ClientSettings) -> Result<Config, Error> {
    resolve(settings, &Environment::of_process()).await
}

/// Builds a client for `config` with the qps/burst limit and content type
/// of `settings` (their connection fields are not read). Tests use it to
/// point a client at a fake API server.
pub fn client_from_config(config: Config, settings: &ClientSettings) -> Result<Client, Error> {
    note_content_type(&settings.content_type);
    let limits = Limits::resolve(settings.qps, settings.burst)
        .map_err(|()| Error::BurstRequired { qps: settings.qps })?;
    let url = config.cluster_url.to_string();
    let builder = ::kube::client::ClientBuilder::try_from(config)
        .map_err(|source| Error::Client { url, source })?;
    Ok(match limits {
        Some(limits) => builder.with_layer(&RateLimitLayer { limits }).build(),
        None => builder.build(),
    })
}

/// Says, once per client, that a non-JSON content type is not used.
fn note_content_type(content_type: &str) {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if essence.is_empty() || essence.eq_ignore_ascii_case(JSON) {
        return;
    }
    if essence.eq_ignore_ascii_case("application/vnd.kubernetes.protobuf") {
        tracing::info!(
            content_type,
            "clientConnection.contentType: protobuf is not supported; using {JSON}"
        );
    } else {
        tracing::warn!(
            content_type,
            "clientConnection.contentType is not a content type the API server speaks; using {JSON}"
        );
    }
}

/// What of the process environment the resolution reads.
#[derive(Debug, Clone, Default)]
pub(crate) struct Environment {
    /// `KUBECONFIG`.
    pub(crate) kubeconfig: Option<OsString>,
    /// client-go's `inClusterClientConfig.Possible()`: the service host
    /// and port variables are set and the token file exists.
    pub(crate) in_cluster: bool,
}

impl Environment {
    fn of_process() -> Self {
        let set = |name| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        Self {
            kubeconfig: std::env::var_os("KUBECONFIG"),
            in_cluster: set("KUBERNETES_SERVICE_HOST")
                && set("KUBERNETES_SERVICE_PORT")
                && Path::new(SERVICE_ACCOUNT_TOKEN).exists(),
        }
    }
}

/// Where the configuration comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// `--kubeconfig`.
    KubeconfigFlag(PathBuf),
    /// `--master` alone, in a pod: in-cluster credentials, `--master` URL.
    MasterInCluster,
    /// `--master` alone, outside a pod: just the URL.
    MasterOnly,
    /// The files listed in `KUBECONFIG`.
    KubeconfigEnv(Vec<PathBuf>),
    /// The pod's service account.
    InCluster,
}

/// Picks the [`Origin`] (module docs give the order).
pub(crate) fn choose_origin(settings: &ClientSettings, env: &Environment) -> Origin {
    if let Some(path) = settings
        .kubeconfig
        .as_ref()
        .filter(|p| !p.as_os_str().is_empty())
    {
        return Origin::KubeconfigFlag(path.clone());
    }
    if master(settings).is_some() {
        return if env.in_cluster {
            Origin::MasterInCluster
        } else {
            Origin::MasterOnly
        };
    }
    let listed: Vec<PathBuf> = env
        .kubeconfig
        .as_ref()
        .map(|value| {
            std::env::split_paths(value)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    if listed.is_empty() {
        Origin::InCluster
    } else {
        Origin::KubeconfigEnv(listed)
    }
}

/// The configuration `settings` resolve to in `env`.
pub(crate) async fn resolve(settings: &ClientSettings, env: &Environment) -> Result<Config, Error> {
    let origin = choose_origin(settings, env);
    let mut config = match &origin {
        Origin::KubeconfigFlag(path) => from_kubeconfig(std::slice::from_ref(path)).await?,
        Origin::KubeconfigEnv(paths) => from_kubeconfig(paths).await?,
        Origin::MasterInCluster | Origin::InCluster => {
            Config::incluster().map_err(|source| Error::InCluster { source })?
        }
        Origin::MasterOnly => Config::new(server_url(master(settings).unwrap_or_default(), false)?),
    };
    if let Some(master) = master(settings) {
        config.cluster_url = server_url(master, uses_tls(&config))?;
    }
    tracing::info!(?origin, server = %config.cluster_url, "API server configuration");
    Ok(config)
}

fn master(settings: &ClientSettings) -> Option<&str> {
    settings.master.as_deref().filter(|m| !m.is_empty())
}

/// Reads and merges kubeconfig files (the first to set a value wins) and
/// picks their current context.
async fn from_kubeconfig(paths: &[PathBuf]) -> Result<Config, Error> {
    let failed = |source| Error::Kubeconfig {
        paths: paths.to_vec(),
        source,
    };
    let merged = paths
        .iter()
        .try_fold(Kubeconfig::default(), |merged, path| {
            Kubeconfig::read_from(path).and_then(|next| merged.merge(next))
        });
    Config::from_custom_kubeconfig(merged.map_err(failed)?, &KubeConfigOptions::default())
        .await
        .map_err(failed)
}

/// client-go's `DefaultServerURL`: an address without a scheme gets
/// `https://` when the configuration has TLS material, else `http://`.
fn server_url(address: &str, tls: bool) -> Result<http::Uri, Error> {
    let invalid = |message: String| Error::ServerUrl {
        url: address.to_string(),
        message,
    };
    let with_scheme = if address.contains("://") {
        address.to_string()
    } else if tls {
        format!("https://{address}")
    } else {
        format!("http://{address}")
    };
    let url: http::Uri = with_scheme.parse().map_err(|e| invalid(format!("{e}")))?;
    if url.host().is_none_or(str::is_empty) {
        return Err(invalid("no host".to_string()));
    }
    Ok(url)
}

fn uses_tls(config: &Config) -> bool {
    config.root_cert.is_some()
        || config.root_cert_file.is_some()
        || config.accept_invalid_certs
        || config.auth_info.client_certificate.is_some()
        || config.auth_info.client_certificate_data.is_some()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;

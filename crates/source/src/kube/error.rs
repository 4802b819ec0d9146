//! Errors of the API server source: everything that can stop a client
//! from being built. (Once the watchers run they never fail: they log and
//! retry.)

use std::path::PathBuf;

/// The API client could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A kubeconfig file (from `--kubeconfig` or `KUBECONFIG`) could not
    /// be read or does not name a usable cluster.
    #[error("loading kubeconfig {}: {source}", display_paths(paths))]
    Kubeconfig {
        /// The file(s) read, in merge order.
        paths: Vec<PathBuf>,
        /// What kube's loader reported.
        source: ::kube::config::KubeconfigError,
    },
    /// Neither `--kubeconfig` nor `--master` was given (nor `KUBECONFIG`),
    /// and the process does not run in a pod with a service account.
    #[error(
        "neither --kubeconfig nor --master given and no in-cluster configuration \
         (KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT and the service account token): {source}"
    )]
    InCluster {
        /// What kube's in-cluster loader reported.
        source: ::kube::config::InClusterError,
    },
    /// `--master` (or the server of the chosen kubeconfig) is not a URL.
    #[error("API server address {url:?} is not a valid URL: {message}")]
    ServerUrl {
        /// The address as given.
        url: String,
        /// Why it does not parse.
        message: String,
    },
    /// `clientConnection.qps` is positive but `burst` is 0: client-go
    /// refuses this too (no request could ever be sent).
    #[error(
        "clientConnection.burst must be greater than 0 when clientConnection.qps ({qps}) is greater than 0"
    )]
    BurstRequired {
        /// The configured qps.
        qps: f32,
    },
    /// kube could not build the HTTP client (TLS material, auth plugin...).
    #[error("building the API client for {url}: {source}")]
    Client {
        /// The API server URL.
        url: String,
        /// kube's error.
        source: ::kube::Error,
    },
}

fn display_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

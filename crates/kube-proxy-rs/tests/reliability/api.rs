//! The source crate's fake API server run inside node-a's namespace (its
//! loopback is where the proxy looks), on a runtime of its own whose
//! threads entered that namespace; the scenario drives it from its own
//! thread.

use crate::fake_api::{FakeApi, Kind};
use serde_json::Value;
use testkit::netns::Netns;

/// The fake API server and the runtime serving it.
pub struct ApiServer {
    api: Option<FakeApi>,
    runtime: tokio::runtime::Runtime,
}

impl ApiServer {
    /// Starts an empty fake API server on node-a's loopback.
    pub fn start_in(node: &Netns) -> Self {
        let runtime = node
            .run(|| tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build())
            .expect("enter node-a")
            .expect("a runtime for the fake API server");
        // Spawned, so the listener is bound on a worker (inside node-a).
        let api = runtime.block_on(async { tokio::spawn(FakeApi::start_new()).await });
        let api = api.expect("start the fake API server");
        Self { api: Some(api), runtime }
    }

    fn api(&self) -> &FakeApi {
        self.api.as_ref().expect("the fake API server is there")
    }

    /// Its URL (`http://127.0.0.1:port`, in node-a).
    pub fn url(&self) -> String {
        self.api().url()
    }

    /// Adds or replaces an object.
    pub fn apply(&self, kind: Kind, object: Value) {
        self.api().apply(kind, object);
    }

    /// The server goes away (every connection cut); the data stays.
    pub fn stop(&mut self) {
        if let Some(api) = self.api.as_mut() {
            api.stop();
        }
    }

    /// The server comes back on the same port (bound inside node-a).
    pub fn start(&mut self) {
        let mut api = self.api.take().expect("the fake API server is there");
        let api = self.runtime.block_on(async {
            tokio::spawn(async move {
                api.start().await;
                api
            })
            .await
        });
        self.api = Some(api.expect("restart the fake API server"));
    }

    /// Deletes an object without any watch hearing of it and forgets the
    /// history: only a re-list finds out.
    pub fn delete_unannounced(&self, kind: Kind, namespace: &str, name: &str) {
        self.api().delete_unannounced(kind, namespace, name);
    }

    /// List requests of `kind` wait from now on.
    pub fn hold_lists(&self, kind: Kind) {
        self.api().hold_lists(kind);
    }

    /// Held list requests of `kind` go through.
    pub fn release_lists(&self, kind: Kind) {
        self.api().release_lists(kind);
    }

    /// How many lists `kind` got: list requests, and watches that list
    /// first (`sendInitialEvents=true`, how the proxy lists when the
    /// server streams lists).
    pub fn lists(&self, kind: Kind) -> usize {
        self.api().lists(kind) + self.api().streaming_lists(kind)
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.stop();
    }
}

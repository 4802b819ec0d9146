//! The manifests watcher: feeds the tracker, picks up changes, ignores
//! broken rewrites.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use source::manifests::{run, watch};
use source::{Error, SourceEvent};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout};
use tracker::Tracker;

const POLL: Duration = Duration::from_millis(20);
/// Long enough for many polls.
const QUIET: Duration = Duration::from_millis(400);

fn service(i: usize) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: s{i}, namespace: ns}}\nspec: {{clusterIP: 10.96.0.{}, ports: [{{port: 80}}]}}\n",
        i + 1
    )
}

fn services(n: usize) -> String {
    (0..n).map(service).collect::<Vec<_>>().join("---\n")
}

fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A running watcher: the tracker it feeds and the events it sent.
struct Running {
    tracker: Arc<Mutex<Tracker>>,
    events: mpsc::UnboundedReceiver<SourceEvent>,
    task: JoinHandle<()>,
}

impl Running {
    fn start_polling(path: &Path, poll: Duration) -> Self {
        let w = watch(path, poll).unwrap();
        let tracker = Arc::new(Mutex::new(Tracker::new("node-a")));
        let (tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(w, Arc::clone(&tracker), move |event| {
            let _ = tx.send(event);
        }));
        Self {
            tracker,
            events,
            task,
        }
    }

    async fn next_event(&mut self) -> SourceEvent {
        timeout(Duration::from_secs(5), self.events.recv())
            .await
            .expect("an event within 5 s")
            .unwrap()
    }

    /// Waits for the first read to be in.
    async fn started(path: &Path) -> Self {
        Self::started_polling(path, POLL).await
    }

    async fn started_polling(path: &Path, poll: Duration) -> Self {
        let mut running = Self::start_polling(path, poll);
        assert_eq!(running.next_event().await, SourceEvent::InitialListDone);
        running
    }

    /// The service ports the tracker holds, with their cluster IPs.
    fn services(&self) -> Vec<String> {
        let snapshot = self.tracker.lock().unwrap().snapshot().0;
        snapshot
            .services
            .values()
            .map(|p| format!("{} {}", p.name, p.cluster_ip))
            .collect()
    }

    fn assert_quiet(&mut self) {
        assert_eq!(self.events.try_recv().unwrap_err(), TryRecvError::Empty);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
async fn picks_up_changes_in_place_and_by_rename() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(1)).unwrap();
    let mut w = Running::started(&path).await;
    assert_eq!(w.services(), ["ns/s0 10.96.0.1"]);

    std::fs::write(&path, services(2)).unwrap();
    assert_eq!(w.next_event().await, SourceEvent::Changed);
    assert_eq!(w.services().len(), 2);

    write_atomically(&path, &services(3));
    assert_eq!(w.next_event().await, SourceEvent::Changed);
    assert_eq!(w.services().len(), 3);
}

#[tokio::test]
async fn a_write_wakes_the_watcher_without_waiting_for_the_poll() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(1)).unwrap();
    let mut w = Running::started_polling(&path, Duration::from_secs(3600)).await;
    // Another file of the directory wakes nothing.
    std::fs::write(dir.path().join("other.yaml"), services(4)).unwrap();
    sleep(QUIET).await;
    w.assert_quiet();

    std::fs::write(&path, services(2)).unwrap();
    assert_eq!(w.next_event().await, SourceEvent::Changed);
    assert_eq!(w.services().len(), 2);
    write_atomically(&path, &services(3));
    assert_eq!(w.next_event().await, SourceEvent::Changed);
    assert_eq!(w.services().len(), 3);
}

#[tokio::test]
async fn same_size_rewrite_right_after_a_read_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(1)).unwrap();
    let first_mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let mut w = Running::started(&path).await;
    // Same length, same inode, and (forced here) the same timestamp: as
    // when two writes land in one coarse timestamp tick.
    let changed = services(1).replace("10.96.0.1", "10.96.0.9");
    std::fs::write(&path, &changed).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(first_mtime)
        .unwrap();
    assert_eq!(w.next_event().await, SourceEvent::Changed);
    assert_eq!(w.services(), ["ns/s0 10.96.0.9"]);
}

#[tokio::test]
async fn unchanged_content_emits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(2)).unwrap();
    let mut w = Running::started(&path).await;
    write_atomically(&path, &services(2));
    sleep(QUIET).await;
    w.assert_quiet();
}

#[tokio::test]
async fn a_re_read_deletes_what_the_file_no_longer_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    let slice = "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: s0-a, namespace: ns, labels: {kubernetes.io/service-name: s0}}\naddressType: IPv4\nendpoints: [{addresses: [10.244.0.5]}]\nports: [{port: 80}]\n";
    std::fs::write(&path, format!("{}---\n{slice}", services(3))).unwrap();
    let mut w = Running::started(&path).await;
    let snapshot = w.tracker.lock().unwrap().snapshot().0;
    assert_eq!(snapshot.services.len(), 3);
    assert_eq!(snapshot.endpoints.len(), 1);

    // s0 and s2 go, and so does the slice; s1 stays.
    std::fs::write(&path, service(1)).unwrap();
    assert_eq!(w.next_event().await, SourceEvent::Changed);
    let snapshot = w.tracker.lock().unwrap().snapshot().0;
    let names: Vec<String> = snapshot.services.keys().map(ToString::to_string).collect();
    assert_eq!(names, ["ns/s1"]);
    assert!(snapshot.endpoints.is_empty());
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// Captures this thread's log lines until the guard drops.
    fn install() -> (Self, tracing::subscriber::DefaultGuard) {
        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .finish();
        (captured, tracing::subscriber::set_default(subscriber))
    }

    fn warnings(&self) -> Vec<String> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .filter(|l| l.contains("WARN"))
            .map(str::to_string)
            .collect()
    }
}

// current_thread: the watcher task runs on this thread, under the
// thread-local log subscriber.
#[tokio::test(flavor = "current_thread")]
async fn broken_rewrite_keeps_the_last_good_state_and_warns_once() {
    let (captured, _guard) = Captured::install();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(1)).unwrap();
    let mut w = Running::started(&path).await;

    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Service\nmetadata: {name: [half-written\n",
    )
    .unwrap();
    sleep(QUIET).await;
    w.assert_quiet();
    assert_eq!(
        w.services(),
        ["ns/s0 10.96.0.1"],
        "a broken file changes nothing"
    );
    let warnings = captured.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("not valid YAML"), "{}", warnings[0]);
    assert!(warnings[0].contains("cluster.yaml"), "{}", warnings[0]);
    assert!(
        warnings[0].contains("keeping the last good state"),
        "{}",
        warnings[0]
    );

    std::fs::write(&path, services(4)).unwrap();
    assert_eq!(w.next_event().await, SourceEvent::Changed);
    assert_eq!(w.services().len(), 4);
}

#[tokio::test(flavor = "current_thread")]
async fn a_vanished_file_keeps_the_state_until_it_is_back() {
    let (captured, _guard) = Captured::install();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(1)).unwrap();
    let mut w = Running::started(&path).await;
    std::fs::remove_file(&path).unwrap();
    sleep(QUIET).await;
    w.assert_quiet();
    assert_eq!(w.services().len(), 1);
    assert_eq!(captured.warnings().len(), 1, "{:?}", captured.warnings());

    std::fs::write(&path, services(2)).unwrap();
    assert_eq!(w.next_event().await, SourceEvent::Changed);
    assert_eq!(w.services().len(), 2);
}

#[tokio::test]
async fn a_bad_file_at_start_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, "{{{").unwrap();
    let err = watch(&path, POLL).unwrap_err();
    assert!(matches!(err, Error::NotYaml { .. }), "{err:?}");
    assert!(matches!(
        watch(dir.path().join("none.yaml"), POLL).unwrap_err(),
        Error::Read { .. }
    ));
}

#[tokio::test(flavor = "current_thread")]
async fn a_rewrite_whose_third_document_is_broken_changes_nothing() {
    let (captured, _guard) = Captured::install();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(2)).unwrap();
    let mut w = Running::started(&path).await;
    let before = w.services();

    // Documents 1, 2, 4 and 5 are good (and would change s0's IP, drop
    // s1, add s3 and s4); document 3 is cut short on line 13.
    let broken = [
        service(0).replace("10.96.0.1", "10.96.0.99"),
        service(2),
        "apiVersion: v1\nkind: Service\nmetadata: {name: [half-written\n".to_string(),
        service(3),
        service(4),
    ]
    .join("---\n");
    std::fs::write(&path, &broken).unwrap();
    sleep(QUIET).await;
    w.assert_quiet();
    assert_eq!(w.services(), before, "a broken file changes nothing");
    let warnings = captured.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("cluster.yaml: not valid YAML"),
        "{}",
        warnings[0]
    );
    assert!(warnings[0].contains("at line 13"), "{}", warnings[0]);

    // A document that is plain text is as bad.
    let not_an_object = broken.replace(
        "metadata: {name: [half-written",
        "metadata: {name: s9, namespace: ns}\n---\njust text",
    );
    std::fs::write(&path, &not_an_object).unwrap();
    sleep(QUIET).await;
    w.assert_quiet();
    assert_eq!(w.services(), before);
    let warnings = captured.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[1].contains("document at line 14 is not a Kubernetes object"),
        "{}",
        warnings[1]
    );
}

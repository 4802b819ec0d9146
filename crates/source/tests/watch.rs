//! The manifests watcher: picks up changes, ignores broken rewrites.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use source::Error;
use source::manifests::watch;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::time::{sleep, timeout};

const POLL: Duration = Duration::from_millis(20);
/// Long enough for many polls.
const QUIET: Duration = Duration::from_millis(400);

fn services(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: Service\nmetadata: {{name: s{i}, namespace: ns}}\nspec: {{clusterIP: 10.96.0.{}, ports: [{{port: 80}}]}}\n",
                i + 1
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[tokio::test]
async fn picks_up_changes_in_place_and_by_rename() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(1)).unwrap();
    let mut w = watch(&path, POLL).unwrap();
    assert_eq!(w.initial.objects.services.len(), 1);

    std::fs::write(&path, services(2)).unwrap();
    let next = timeout(Duration::from_secs(5), w.updates.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next.objects.services.len(), 2);

    write_atomically(&path, &services(3));
    let next = timeout(Duration::from_secs(5), w.updates.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next.objects.services.len(), 3);
}

#[tokio::test]
async fn same_size_rewrite_right_after_a_read_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(1)).unwrap();
    let first_mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let mut w = watch(&path, POLL).unwrap();
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
    let next = timeout(Duration::from_secs(5), w.updates.recv())
        .await
        .unwrap()
        .unwrap();
    let ip = next.objects.services[0]
        .spec
        .as_ref()
        .unwrap()
        .cluster_ip
        .clone();
    assert_eq!(ip.as_deref(), Some("10.96.0.9"));
}

#[tokio::test]
async fn unchanged_content_emits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(2)).unwrap();
    let mut w = watch(&path, POLL).unwrap();
    write_atomically(&path, &services(2));
    sleep(QUIET).await;
    assert_eq!(w.updates.try_recv().unwrap_err(), TryRecvError::Empty);
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
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(1)).unwrap();
    let mut w = watch(&path, POLL).unwrap();

    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Service\nmetadata: {name: [half-written\n",
    )
    .unwrap();
    sleep(QUIET).await;
    assert_eq!(
        w.updates.try_recv().unwrap_err(),
        TryRecvError::Empty,
        "a broken file sends nothing"
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
    let next = timeout(Duration::from_secs(5), w.updates.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next.objects.services.len(), 4);
}

#[tokio::test(flavor = "current_thread")]
async fn a_vanished_file_keeps_the_state_until_it_is_back() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(1)).unwrap();
    let mut w = watch(&path, POLL).unwrap();
    std::fs::remove_file(&path).unwrap();
    sleep(QUIET).await;
    assert_eq!(w.updates.try_recv().unwrap_err(), TryRecvError::Empty);
    assert_eq!(captured.warnings().len(), 1, "{:?}", captured.warnings());

    std::fs::write(&path, services(2)).unwrap();
    let next = timeout(Duration::from_secs(5), w.updates.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next.objects.services.len(), 2);
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

#[test]
fn watching_needs_a_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, services(1)).unwrap();
    let err = watch(&path, POLL).unwrap_err();
    assert!(matches!(err, Error::NoRuntime { .. }), "{err:?}");
}

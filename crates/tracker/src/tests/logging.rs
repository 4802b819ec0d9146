//! Each problem is logged exactly once, naming the object.

use super::support::*;
use crate::Tracker;
use std::io::Write;
use std::sync::{Arc, Mutex};

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

fn logged(run: impl FnOnce()) -> Vec<String> {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    tracing::subscriber::with_default(subscriber, run);
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    text.lines().map(str::to_string).collect()
}

#[test]
fn one_warning_line_per_problem() {
    let lines = logged(|| {
        let mut t = Tracker::new("node-a");
        t.upsert_service(&plain_service("ns", "bad", "300.0.0.1"));
        t.upsert_service(&plain_service("ns", "good", "10.96.0.1"));
        t.snapshot();
    });
    let warns: Vec<&String> = lines.iter().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warns.len(), 1, "{lines:?}");
    assert!(warns[0].contains("Service ns/bad"), "{}", warns[0]);
    assert!(
        warns[0].contains("bad clusterIP \"300.0.0.1\""),
        "{}",
        warns[0]
    );
}

//! The `iptables-save` reader (`crates/xtables/src/apply/saved.rs`) and what
//! a full sync builds on it: any text as the kernel's saved tables is read,
//! compared with the rendered chains of the upstream reference scenario
//! (`examples/cluster.yaml`, whose chain names the seeds share), and turned
//! into a restore input and a rollback input, never a panic; chains of ours
//! the kernel holds and we no longer render are deleted.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn reference_ruleset() -> &'static xtables::Ruleset {
    static RULESET: OnceLock<xtables::Ruleset> = OnceLock::new();
    RULESET.get_or_init(|| {
        let parsed = source::manifests::parse(include_str!("../../examples/cluster.yaml")).unwrap_or_else(|e| panic!("examples/cluster.yaml: {e}"));
        let mut tracker = tracker::Tracker::new("node-a");
        tracker.replace_all(&parsed.objects);
        let (snapshot, _) = tracker.snapshot();
        iptables::render::render(&snapshot, &iptables::render::RenderOptions::default()).ruleset
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| tokio::runtime::Builder::new_current_thread().build().unwrap_or_else(|e| panic!("runtime: {e}")))
}

fuzz_target!(|data: &[u8]| {
    let Ok(saved) = std::str::from_utf8(data) else { return };
    let ruleset = reference_ruleset();
    for blocks in [None, Some(3)] {
        let (restore, _rollback) = runtime().block_on(xtables::apply::plan_over_saved(ruleset, saved, blocks));
        if !restore.is_empty() {
            assert!(restore.trim_end().ends_with("COMMIT"), "restore input does not end with COMMIT:\n{restore}");
        }
    }
});

//! The command line (`crates/kube-proxy-rs/src/flags.rs` and its validation
//! in `config`): one argument per input line. Any command line is accepted
//! or rejected with an error, never a panic; and what `--write-config-to`
//! would write for an accepted one loads again with `--config`.

#![no_main]

use binary_parsers::{config, flags::Flags};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let args = std::iter::once("kube-proxy").chain(text.lines());
    let Ok(mut flags) = Flags::parse_from_args(args) else { return };
    // A file named by the input is never read (it could be /dev/zero).
    flags.config = None;
    let Ok(loaded) = config::load(&flags) else { return };
    let yaml = loaded.effective_yaml().unwrap_or_else(|e| panic!("effective configuration not written: {e}"));
    let path = std::env::temp_dir().join(format!("kube-proxy-rs-fuzz-flags-{}.yaml", std::process::id()));
    std::fs::write(&path, &yaml).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reread = Flags::parse_from_args(["kube-proxy".as_ref(), "--config".as_ref(), path.as_os_str()])
        .unwrap_or_else(|e| panic!("--config rejected: {e}"));
    if let Err(e) = config::load(&reread) {
        panic!("the effective configuration does not load: {e}\n{yaml}");
    }
});

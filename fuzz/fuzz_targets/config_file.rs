//! The config file (`KubeProxyConfiguration`, `crates/kube-proxy-rs/src/config`):
//! any file is loaded or rejected with an error, never a panic; the effective
//! configuration written for a loaded one loads again to the same
//! configuration.

#![no_main]

use binary_parsers::{config, flags::Flags};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;

fn load_file(path: &PathBuf, text: &[u8]) -> Result<config::Loaded, String> {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let flags = Flags::parse_from_args(["kube-proxy".as_ref(), "--config".as_ref(), path.as_os_str()])
        .unwrap_or_else(|e| panic!("--config rejected: {e}"));
    config::load(&flags).map_err(|e| e.to_string())
}

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("kube-proxy-rs-fuzz-config-{}.yaml", std::process::id()));
    let Ok(loaded) = load_file(&path, data) else { return };
    let yaml = loaded.effective_yaml().unwrap_or_else(|e| panic!("effective configuration not written: {e}"));
    match load_file(&path, yaml.as_bytes()) {
        Ok(again) => assert_eq!(again.config, loaded.config, "the effective configuration loads differently:\n{yaml}"),
        Err(e) => panic!("the effective configuration does not load: {e}\n{yaml}"),
    }
});

//! Go duration text (`crates/kube-proxy-rs/src/duration.rs`): any string is
//! read or rejected, never a panic; what is read prints as Go prints it, and
//! that text reads back to the same duration.

#![no_main]

use binary_parsers::duration::GoDuration;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(duration) = text.parse::<GoDuration>() else { return };
    let printed = duration.to_string();
    let again: GoDuration = printed.parse().unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which is rejected: {e}"));
    assert_eq!(again, duration, "{text:?} printed as {printed:?}");
    let _ = duration.to_std();
});

//! The nf_tables netlink decoders (`crates/nftables/src/codec` and the table
//! listing): any receive buffers either decode to a table's contents or fail
//! with a decode error naming the listing, never a panic. The first byte
//! splits the input into two buffers (a listing reads several).

#![no_main]

use libfuzzer_sys::fuzz_target;
use nftables::{Family, TableContents};

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else { return };
    let at = usize::from(split).min(rest.len());
    let buffers = [rest[..at].to_vec(), rest[at..].to_vec()];
    for family in [Family::Ip, Family::Ip6] {
        if let Ok(Some(contents)) = TableContents::decode(family, "kube-proxy-test", &buffers) {
            for set in &contents.sets {
                let _ = TableContents::set_key(set);
            }
        }
    }
});

//! The ctnetlink reply decoder (`crates/conntrack/src/netlink/codec.rs`): any
//! bytes decode to replies or fail with a decode error, never a panic; every
//! decoded flow can be deleted (its delete request is encoded) and goes
//! through the stale-flow filter.

#![no_main]

use conntrack::netlink::codec::{Reply, parse_replies, push_delete};
use conntrack::{ServiceTargets, find_stale_entries};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(replies) = parse_replies(data) else { return };
    let flows: Vec<_> = replies
        .into_iter()
        .filter_map(|r| match r {
            Reply::Flow(flow) => Some(flow),
            _ => None,
        })
        .collect();
    let mut request = Vec::new();
    for (seq, flow) in (0..).zip(&flows) {
        push_delete(&mut request, flow, seq);
    }
    let targets = ServiceTargets::new(&model::Snapshot::default(), &[]);
    let _ = find_stale_entries(&flows, &targets);
});

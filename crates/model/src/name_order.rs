//! Sorting many entries by [`ServicePortName`] without chasing its
//! pointers at every comparison. A name is an `Arc` of parts whose
//! service is another `Arc` of two strings: comparing two names reads
//! four heap blocks, and sorting 100,000 of them (the first snapshot of a
//! large cluster) spent most of its time waiting for memory. Each name's
//! first [`PREFIX`] bytes in order are copied once beside it; names whose
//! prefixes differ compare by the copies alone.

use crate::{Protocol, ServicePortName};

/// How many leading bytes of a name's order key are copied.
const PREFIX: usize = 32;

/// The first [`PREFIX`] bytes of `namespace 0 name 0 port 0 protocol`,
/// zero-padded, as two big-endian integers (compared without a call). Names hold no zero byte and the protocol's byte is not
/// zero, so no key is a proper prefix of another: two keys compare as
/// their names do, and two names whose keys' first bytes differ compare
/// as those bytes.
fn order_prefix(name: &ServicePortName) -> (u128, u128) {
    let protocol = match name.protocol {
        Protocol::Tcp => 1,
        Protocol::Udp => 2,
        Protocol::Sctp => 3,
    };
    let parts = [
        name.service.namespace.as_bytes(),
        &[0],
        name.service.name.as_bytes(),
        &[0],
        name.port.as_bytes(),
        &[0, protocol],
    ];
    let mut prefix = [0; PREFIX];
    let mut at = 0;
    for part in parts {
        let take = part.len().min(PREFIX - at);
        prefix[at..at + take].copy_from_slice(&part[..take]);
        at += take;
    }
    let (high, low) = prefix.split_at(PREFIX / 2);
    let half = |bytes: &[u8]| u128::from_be_bytes(bytes.try_into().unwrap_or_default());
    (half(high), half(low))
}

/// Sorts `entries` by name (stable), each name's prefix computed once.
pub fn sort_by_port_name<V>(entries: &mut [(ServicePortName, V)]) {
    entries.sort_by_cached_key(|(name, _)| (order_prefix(name), name.clone()));
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn names() -> Vec<ServicePortName> {
        let texts = ["", "a", "a-b", "ab", "b", "x".repeat(40).leak(), "x".repeat(41).leak()];
        let mut out = Vec::new();
        for ns in texts {
            for name in texts {
                for port in ["", "http", "a"] {
                    for protocol in [Protocol::Tcp, Protocol::Udp, Protocol::Sctp] {
                        out.push(ServicePortName::new(ns, name, port, protocol));
                    }
                }
            }
        }
        out
    }

    #[test]
    fn prefixes_that_differ_order_as_the_names() {
        let names = names();
        for a in &names {
            for b in &names {
                let (pa, pb) = (order_prefix(a), order_prefix(b));
                if pa != pb {
                    assert_eq!(pa.cmp(&pb), a.cmp(b), "{a} / {b}");
                }
            }
        }
    }

    #[test]
    fn sorts_as_the_names_order() {
        let mut entries: Vec<(ServicePortName, usize)> = names().into_iter().rev().enumerate().map(|(i, n)| (n, i)).collect();
        let mut expected = entries.clone();
        expected.sort_by(|a, b| a.0.cmp(&b.0));
        sort_by_port_name(&mut entries);
        assert_eq!(entries, expected);
    }
}

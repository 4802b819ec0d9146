//! Fingerprints of anonymous sets: a SHA-256 of a set's definition and
//! elements, kept in the set's comment when we create it. A bound
//! anonymous set is constant, so a full sync (even the first one of a
//! restarted proxy) can trust the fingerprint listed with the set instead
//! of dumping its elements — each dump costs the kernel a walk of all the
//! table's sets. `nft` does not print the comments of anonymous sets.

use crate::{Element, ElementData, Set, Value, Verdict};
use sha2::{Digest, Sha256};

/// What starts the comment of an anonymous set we fingerprinted.
const MARKER: &str = "kube-proxy content ";

/// The comment holding the fingerprint of `set` (comment aside) with
/// `elements` (in the order given; callers sort them).
pub(crate) fn comment(set: &Set, elements: &[Element]) -> String {
    let mut h = Sha256::new();
    h.update(set.flags.0.to_be_bytes());
    for ty in set.key.iter().chain(set.data.iter().flatten()) {
        h.update(ty.id().to_be_bytes());
    }
    h.update([set.data.is_some() as u8]);
    h.update(set.timeout_ms.unwrap_or(0).to_be_bytes());
    h.update(set.size.unwrap_or(0).to_be_bytes());
    for e in elements {
        element(&mut h, e);
    }
    let digest = h.finalize();
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(MARKER.len() + 32);
    out.push_str(MARKER);
    for b in &digest[..16] {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
    out
}

/// Whether `comment` is a fingerprint we wrote.
pub(crate) fn is_fingerprint(comment: &str) -> bool {
    comment.starts_with(MARKER)
}

fn element(h: &mut Sha256, e: &Element) {
    h.update([0xe1]);
    values(h, &e.key);
    h.update([e.is_interval_end() as u8]);
    match e.key_end() {
        Some(k) => {
            h.update([1]);
            values(h, k);
        }
        None => h.update([0]),
    }
    match &e.data {
        None => h.update([0]),
        Some(ElementData::Values(v)) => {
            h.update([1]);
            values(h, v);
        }
        Some(ElementData::Verdict(v)) => {
            h.update([2]);
            verdict(h, v);
        }
    }
    h.update(e.timeout_ms().unwrap_or(0).to_be_bytes());
    let comment = e.comment().unwrap_or("");
    h.update((comment.len() as u32).to_be_bytes());
    h.update(comment.as_bytes());
}

fn values(h: &mut Sha256, values: &[Value]) {
    h.update((values.len() as u32).to_be_bytes());
    for v in values {
        let bytes = v.to_bytes();
        h.update([bytes.len() as u8]);
        h.update(bytes);
    }
}

fn verdict(h: &mut Sha256, v: &Verdict) {
    let (code, chain) = match v {
        Verdict::Accept => (0u8, ""),
        Verdict::Drop => (1, ""),
        Verdict::Continue => (2, ""),
        Verdict::Return => (3, ""),
        Verdict::Jump(c) => (4, c.as_str()),
        Verdict::Goto(c) => (5, c.as_str()),
    };
    h.update([code]);
    h.update((chain.len() as u32).to_be_bytes());
    h.update(chain.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DataType;

    #[test]
    fn differs_with_any_element_and_not_with_order_given_the_same() {
        let set = Set::anonymous(1, vec![DataType::Integer], Some(vec![DataType::Ipv4Addr]));
        let e = |n: u32, a: [u8; 4]| {
            Element::data(vec![Value::Integer(n)], vec![Value::Ipv4(a.into())])
        };
        let one = comment(&set, &[e(0, [10, 0, 0, 1]), e(1, [10, 0, 0, 2])]);
        assert!(is_fingerprint(&one));
        assert_eq!(
            one,
            comment(&set, &[e(0, [10, 0, 0, 1]), e(1, [10, 0, 0, 2])])
        );
        assert_ne!(
            one,
            comment(&set, &[e(0, [10, 0, 0, 1]), e(1, [10, 0, 0, 3])])
        );
        assert_ne!(one, comment(&set, &[e(0, [10, 0, 0, 1])]));
        let mut other = set.clone();
        other.flags = other.flags | crate::SetFlags::INTERVAL;
        assert_ne!(
            one,
            comment(&other, &[e(0, [10, 0, 0, 1]), e(1, [10, 0, 0, 2])])
        );
    }
}

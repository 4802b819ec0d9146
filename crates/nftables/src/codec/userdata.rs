//! User data as libnftnl writes it (what `nft` shows as `comment "…"`):
//! a list of `type(u8) length(u8) value` entries, the comment a
//! NUL-terminated string.

use crate::{DataType, TypeOf};

/// User data holding only a comment of type `kind`. `nft` limits
/// comments to 128 bytes; longer ones are cut there.
pub(crate) fn comment(kind: u8, text: &str) -> Vec<u8> {
    let cut = (0..=text.len().min(127))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let text = &text.as_bytes()[..cut];
    let mut out = Vec::with_capacity(text.len() + 3);
    out.push(kind);
    out.push((text.len() + 1) as u8);
    out.extend_from_slice(text);
    out.push(0);
    out
}

/// The comment of type `kind` in user data, if any.
pub(crate) fn parse_comment(kind: u8, data: &[u8]) -> Option<String> {
    let value = entry(kind, data)?;
    let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
    String::from_utf8(value[..end].to_vec()).ok()
}

/// `NFTNL_UDATA_SET_KEYBYTEORDER` / `DATABYTEORDER`: tell `nft` that a
/// key or data holds host-order numbers (`numgen` results, marks), so it
/// lists `1` rather than `16777216`. Value: `BYTEORDER_HOST_ENDIAN`.
const UDATA_SET_KEYBYTEORDER: u8 = 0;
const UDATA_SET_DATABYTEORDER: u8 = 1;
const BYTEORDER_HOST_ENDIAN: u32 = 1;

/// A set's user data as `nft` writes it: byte orders, `typeof`, then the
/// comment.
pub(crate) fn set_userdata(
    key: &[DataType],
    data: Option<&[DataType]>,
    type_of: Option<TypeOf>,
    comment: Option<&str>,
) -> Vec<u8> {
    let host_order = |types: &[DataType]| {
        types
            .iter()
            .any(|t| matches!(t, DataType::Integer | DataType::Mark))
    };
    let mut out = Vec::new();
    for (kind, types) in [
        (UDATA_SET_KEYBYTEORDER, Some(key)),
        (UDATA_SET_DATABYTEORDER, data),
    ] {
        if types.is_some_and(host_order) {
            out.extend_from_slice(&[kind, 4]);
            out.extend_from_slice(&BYTEORDER_HOST_ENDIAN.to_ne_bytes());
        }
    }
    if let Some(t) = type_of {
        out.extend(type_of_userdata(t));
    }
    if let Some(c) = comment {
        out.extend(self::comment(super::constants::UDATA_SET_COMMENT, c));
    }
    out
}

/// `NFTNL_UDATA_SET_KEY_TYPEOF` / `DATA_TYPEOF` / `DATA_INTERVAL`.
const UDATA_SET_KEY_TYPEOF: u8 = 3;
const UDATA_SET_DATA_TYPEOF: u8 = 4;
const UDATA_SET_DATA_INTERVAL: u8 = 6;
/// `nft`'s expression kinds (`enum expr_types`) in a `typeof`.
const EXPR_PAYLOAD: u32 = 7;
const EXPR_CONCAT: u32 = 13;
const EXPR_NUMGEN: u32 = 23;
/// `nft`'s header descriptions and fields: `ip daddr`, `ip6 daddr`,
/// `th dport` (any transport: one map serves TCP, UDP and SCTP).
const PROTO_IP: u32 = 12;
const IP_DADDR: u32 = 12;
const PROTO_IP6: u32 = 13;
const IP6_DADDR: u32 = 9;
const PROTO_TH: u32 = 11;
const TH_DPORT: u32 = 2;
/// `NFT_NG_RANDOM`.
const NUMGEN_RANDOM: u32 = 1;

/// One `type length value` entry.
fn tlv(kind: u8, value: &[u8]) -> Vec<u8> {
    let mut out = vec![kind, u8::try_from(value.len()).unwrap_or(u8::MAX)];
    out.extend_from_slice(value);
    out
}

/// An entry holding a host-order 32-bit number.
fn tlv_u32(kind: u8, value: u32) -> Vec<u8> {
    tlv(kind, &value.to_ne_bytes())
}

/// An expression of a `typeof`: its kind, then its own entries.
fn typeof_expr(kind: u32, inner: &[u8]) -> Vec<u8> {
    [tlv_u32(0, kind), tlv(1, inner)].concat()
}

fn payload(desc: u32, field: u32) -> Vec<u8> {
    typeof_expr(
        EXPR_PAYLOAD,
        &[tlv_u32(0, desc), tlv_u32(1, field)].concat(),
    )
}

/// The `typeof` entries `nft` 1.0 writes for `t`.
fn type_of_userdata(t: TypeOf) -> Vec<u8> {
    let TypeOf::NumgenToDaddrDport { modulus, v6 } = t;
    let numgen = [
        tlv_u32(0, NUMGEN_RANDOM),
        tlv_u32(1, modulus),
        tlv_u32(2, 0),
    ]
    .concat();
    let daddr = match v6 {
        true => payload(PROTO_IP6, IP6_DADDR),
        false => payload(PROTO_IP, IP_DADDR),
    };
    let dport = payload(PROTO_TH, TH_DPORT);
    let concat = [tlv(0, &daddr), tlv(1, &dport)].concat();
    [
        tlv(UDATA_SET_KEY_TYPEOF, &typeof_expr(EXPR_NUMGEN, &numgen)),
        tlv(UDATA_SET_DATA_TYPEOF, &typeof_expr(EXPR_CONCAT, &concat)),
        tlv_u32(UDATA_SET_DATA_INTERVAL, 0),
    ]
    .concat()
}

/// The value of the first entry of type `kind` in `data`.
fn entry(kind: u8, mut data: &[u8]) -> Option<&[u8]> {
    while let [ty, len, rest @ ..] = data {
        let value = rest.get(..usize::from(*len))?;
        if *ty == kind {
            return Some(value);
        }
        data = &rest[usize::from(*len)..];
    }
    None
}

fn entry_u32(kind: u8, data: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(entry(kind, data)?.try_into().ok()?))
}

/// The `typeof` of a set's user data, when it is one of ours.
pub(crate) fn parse_type_of(data: &[u8]) -> Option<TypeOf> {
    let key = entry(UDATA_SET_KEY_TYPEOF, data)?;
    (entry_u32(0, key)? == EXPR_NUMGEN).then_some(())?;
    let numgen = entry(1, key)?;
    let modulus = entry_u32(1, numgen)?;
    let data_of = entry(UDATA_SET_DATA_TYPEOF, data)?;
    let first = entry(0, entry(1, data_of)?)?;
    let v6 = match entry_u32(0, entry(1, first)?)? {
        PROTO_IP6 => true,
        PROTO_IP => false,
        _ => return None,
    };
    Some(TypeOf::NumgenToDaddrDport { modulus, v6 })
}

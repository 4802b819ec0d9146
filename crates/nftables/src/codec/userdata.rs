//! User data as libnftnl writes it (what `nft` shows as `comment "…"`):
//! a list of `type(u8) length(u8) value` entries, the comment a
//! NUL-terminated string.

use crate::DataType;

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
pub(crate) fn parse_comment(kind: u8, mut data: &[u8]) -> Option<String> {
    while let [ty, len, rest @ ..] = data {
        let value = rest.get(..usize::from(*len))?;
        if *ty == kind {
            let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
            return String::from_utf8(value[..end].to_vec()).ok();
        }
        data = &rest[usize::from(*len)..];
    }
    None
}

/// `NFTNL_UDATA_SET_KEYBYTEORDER` / `DATABYTEORDER`: tell `nft` that a
/// key or data holds host-order numbers (`numgen` results, marks), so it
/// lists `1` rather than `16777216`. Value: `BYTEORDER_HOST_ENDIAN`.
const UDATA_SET_KEYBYTEORDER: u8 = 0;
const UDATA_SET_DATABYTEORDER: u8 = 1;
const BYTEORDER_HOST_ENDIAN: u32 = 1;

/// A set's user data as `nft` writes it: byte orders, then the comment.
pub(crate) fn set_userdata(
    key: &[DataType],
    data: Option<&[DataType]>,
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
    if let Some(c) = comment {
        out.extend(self::comment(super::constants::UDATA_SET_COMMENT, c));
    }
    out
}

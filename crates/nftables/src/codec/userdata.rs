//! User data as libnftnl writes it (what `nft` shows as `comment "…"`):
//! a list of `type(u8) length(u8) value` entries, the comment a
//! NUL-terminated string.

/// User data holding only a comment of type `kind`. `nft` limits
/// comments to 128 bytes; longer ones are cut there.
pub(crate) fn comment(kind: u8, text: &str) -> Vec<u8> {
    let text = &text.as_bytes()[..text.len().min(127)];
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

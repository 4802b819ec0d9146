//! Small helpers shared by the attribute codecs: fixed-width values,
//! NUL-terminated strings and nested attribute lists.

use netlink_packet_core::{DecodeError, Emitable, Nla, NlaBuffer, NlasIterator, Parseable};

/// Parses every attribute in `payload` with `parse_one`.
pub(crate) fn parse_all<T>(
    payload: &[u8],
    parse_one: impl Fn(&NlaBuffer<&[u8]>) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    NlasIterator::new(payload).map(|nla| parse_one(&nla?)).collect()
}

/// Length of a nested attribute list's value.
pub(crate) fn nested_len<T: Nla>(attrs: &[T]) -> usize {
    <&[T] as Emitable>::buffer_len(&attrs)
}

/// Writes a nested attribute list into `buffer`.
pub(crate) fn emit_nested<T: Nla>(attrs: &[T], buffer: &mut [u8]) {
    <&[T] as Emitable>::emit(&attrs, buffer)
}

/// Writes `s` followed by a NUL, as the kernel's `NLA_NUL_STRING` wants.
pub(crate) fn emit_cstring(s: &str, buffer: &mut [u8]) {
    buffer[..s.len()].copy_from_slice(s.as_bytes());
    buffer[s.len()] = 0;
}

/// Parses a raw attribute kept as is (unknown kinds).
pub(crate) fn parse_default(buf: &NlaBuffer<&[u8]>) -> Result<netlink_packet_core::DefaultNla, DecodeError> {
    netlink_packet_core::DefaultNla::parse(buf)
}

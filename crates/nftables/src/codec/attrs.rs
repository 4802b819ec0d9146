//! Netlink attributes written straight into a byte buffer, and read back
//! with `netlink-packet-core`'s attribute iterator. nf_tables numbers are
//! big-endian on the wire.

use netlink_packet_core::{DecodeError, NLA_F_NESTED, NlaBuffer, NlasIterator};

/// Appends attributes to a message under construction.
pub(crate) struct AttrWriter<'a> {
    buf: &'a mut Vec<u8>,
}

impl<'a> AttrWriter<'a> {
    pub(crate) fn new(buf: &'a mut Vec<u8>) -> Self {
        Self { buf }
    }

    /// One attribute with a raw value, padded to 4 bytes.
    pub(crate) fn bytes(&mut self, kind: u16, value: &[u8]) {
        let len = 4 + value.len();
        self.buf.extend_from_slice(&(len as u16).to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(value);
        self.pad();
    }

    pub(crate) fn u32(&mut self, kind: u16, value: u32) {
        self.bytes(kind, &value.to_be_bytes());
    }

    pub(crate) fn u64(&mut self, kind: u16, value: u64) {
        self.bytes(kind, &value.to_be_bytes());
    }

    /// A NUL-terminated string (`NLA_STRING` as libnftnl sends it).
    pub(crate) fn str(&mut self, kind: u16, value: &str) {
        let len = 4 + value.len() + 1;
        self.buf.extend_from_slice(&(len as u16).to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(value.as_bytes());
        self.buf.push(0);
        self.pad();
    }

    /// A nested attribute whose content `fill` writes.
    pub(crate) fn nested(&mut self, kind: u16, fill: impl FnOnce(&mut AttrWriter<'_>)) {
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0, 0]);
        self.buf
            .extend_from_slice(&(kind | NLA_F_NESTED).to_ne_bytes());
        fill(&mut AttrWriter::new(self.buf));
        let len = (self.buf.len() - start) as u16;
        self.buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
    }

    fn pad(&mut self) {
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
    }
}

/// Every attribute of `payload` as (kind, value).
pub(crate) fn attrs(payload: &[u8]) -> impl Iterator<Item = Result<(u16, &[u8]), DecodeError>> {
    NlasIterator::new(payload).map(|nla| {
        nla.map(|n: NlaBuffer<&[u8]>| {
            let (kind, len) = (n.kind(), usize::from(n.length()));
            let bytes: &[u8] = n.into_inner();
            (kind, bytes.get(4..len).unwrap_or_default())
        })
    })
}

pub(crate) fn be32(value: &[u8]) -> Result<u32, DecodeError> {
    let bytes: [u8; 4] = value
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| DecodeError::invalid_number(4, value.len()))?;
    Ok(u32::from_be_bytes(bytes))
}

pub(crate) fn be64(value: &[u8]) -> Result<u64, DecodeError> {
    let bytes: [u8; 8] = value
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| DecodeError::invalid_number(8, value.len()))?;
    Ok(u64::from_be_bytes(bytes))
}

/// A string attribute, without its NUL.
pub(crate) fn string(value: &[u8]) -> Result<String, DecodeError> {
    let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
    String::from_utf8(value[..end].to_vec())
        .map_err(|e| DecodeError::from(format!("invalid UTF-8 in string attribute: {e}")))
}

impl AttrWriter<'_> {
    /// Already-encoded attributes, copied as they are.
    pub(crate) fn bytes_raw(&mut self, raw: &[u8]) {
        self.buf.extend_from_slice(raw);
        self.pad();
    }
}

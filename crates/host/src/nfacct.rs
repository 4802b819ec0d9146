//! nfacct counters (`NFNL_MSG_ACCT_NEW` / `_GET` over nfnetlink; the
//! objects live in the caller's network namespace): created before rules
//! may name them (`-m nfacct --nfacct-name ...`: the kernel refuses a rule
//! naming a counter that does not exist), and read back for the metrics.
//!
//! The messages are a header, `nfgenmsg` and one name attribute, so they
//! are encoded here by hand over a plain `NETLINK_NETFILTER` socket. The
//! calls block for one kernel round trip (microseconds) and run on the
//! caller's thread, so they act in that thread's network namespace.

use crate::Error;
use rtnetlink::sys::{Socket, SocketAddr, protocols::NETLINK_NETFILTER};
use std::io;

const NFNL_SUBSYS_ACCT: u16 = 7;
const NFNL_MSG_ACCT_NEW: u16 = 0;
const NFNL_MSG_ACCT_GET: u16 = 1;
const NFACCT_NAME: u16 = 1;
const NFACCT_PKTS: u16 = 2;
const NFACCT_NAME_MAX: usize = 32;
const NLMSG_ERROR: u16 = 2;
const NLMSG_HDRLEN: usize = 16;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
/// `EEXIST` (the same on every Linux architecture): the counter exists.
const EEXIST: i32 = 17;

/// Creates the nfacct counter `name` unless it exists.
pub fn apply_counter(name: &str) -> Result<(), Error> {
    let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
    match request(NFNL_MSG_ACCT_NEW, flags, name) {
        Err(err) if err.raw_os_error() == Some(EEXIST) => Ok(()),
        other => other.map(drop),
    }
    .map_err(|source| Error::Netlink {
        operation: format!("nfacct add {name}"),
        source,
    })
}

/// The packet count of the nfacct counter `name`.
pub fn read_packets(name: &str) -> Result<u64, Error> {
    let operation = || format!("nfacct get {name}");
    let replies =
        request(NFNL_MSG_ACCT_GET, NLM_F_REQUEST | NLM_F_ACK, name).map_err(|source| {
            Error::Netlink {
                operation: operation(),
                source,
            }
        })?;
    replies
        .iter()
        .find_map(|payload| packets_attr(payload))
        .ok_or_else(|| Error::Netlink {
            operation: operation(),
            source: io::Error::new(io::ErrorKind::InvalidData, "reply without NFACCT_PKTS"),
        })
}

/// Sends one nfacct request and returns the payloads (after `nfgenmsg`)
/// of the replies before the kernel's ack; a negative ack is the error.
fn request(kind: u16, flags: u16, name: &str) -> io::Result<Vec<Vec<u8>>> {
    if name.is_empty() || name.len() >= NFACCT_NAME_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "nfacct names are 1 to 31 bytes",
        ));
    }
    let mut socket = Socket::new(NETLINK_NETFILTER)?;
    socket.bind_auto()?;
    socket.connect(&SocketAddr::new(0, 0))?;
    socket.send(&encode(kind, flags, name), 0)?;
    let mut replies = Vec::new();
    loop {
        let (buf, _) = socket.recv_from_full()?;
        for (msg_type, body) in messages(&buf) {
            if msg_type == NLMSG_ERROR {
                return ack_result(body).map(|()| replies);
            }
            replies.push(body.get(4..).unwrap_or_default().to_vec());
        }
    }
}

/// Header, `nfgenmsg` (AF_UNSPEC, version 0, res_id 0) and the name.
fn encode(kind: u16, flags: u16, name: &str) -> Vec<u8> {
    let attr_len = 4 + name.len() + 1;
    let total = NLMSG_HDRLEN + 4 + align4(attr_len);
    let mut buf = Vec::with_capacity(total);
    buf.extend_from_slice(&(total as u32).to_ne_bytes());
    buf.extend_from_slice(&((NFNL_SUBSYS_ACCT << 8) | kind).to_ne_bytes());
    buf.extend_from_slice(&flags.to_ne_bytes());
    buf.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    buf.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel
    buf.extend_from_slice(&[0, 0, 0, 0]);
    buf.extend_from_slice(&(attr_len as u16).to_ne_bytes());
    buf.extend_from_slice(&NFACCT_NAME.to_ne_bytes());
    buf.extend_from_slice(name.as_bytes());
    buf.resize(total, 0);
    buf
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// The (type, body after the header) of each message in a datagram.
fn messages(buf: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(header) = buf.get(at..at + NLMSG_HDRLEN) {
        let len = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let msg_type = u16::from_ne_bytes([header[4], header[5]]);
        let Some(body) = buf.get(at + NLMSG_HDRLEN..at + len.max(NLMSG_HDRLEN)) else {
            break;
        };
        out.push((msg_type, body));
        at += align4(len.max(NLMSG_HDRLEN));
    }
    out
}

/// An `NLMSG_ERROR` body: errno 0 is the ack, anything else the error.
fn ack_result(body: &[u8]) -> io::Result<()> {
    let code = body
        .get(..4)
        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .unwrap_or(-1);
    if code == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(-code))
    }
}

/// The big-endian `NFACCT_PKTS` attribute of a reply payload.
fn packets_attr(payload: &[u8]) -> Option<u64> {
    let mut at = 0;
    while let Some(head) = payload.get(at..at + 4) {
        let len = u16::from_ne_bytes([head[0], head[1]]) as usize;
        let kind = u16::from_ne_bytes([head[2], head[3]]) & 0x3fff;
        if len < 4 {
            return None;
        }
        if kind == NFACCT_PKTS {
            let value: [u8; 8] = payload.get(at + 4..at + 12)?.try_into().ok()?;
            return Some(u64::from_be_bytes(value));
        }
        at += align4(len);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_layout_is_header_nfgenmsg_and_padded_name() {
        let buf = encode(NFNL_MSG_ACCT_NEW, NLM_F_REQUEST | NLM_F_ACK, "abc");
        assert_eq!(buf.len(), 16 + 4 + 8);
        assert_eq!(
            u32::from_ne_bytes(buf[0..4].try_into().unwrap_or_default()),
            28
        );
        assert_eq!(u16::from_ne_bytes([buf[4], buf[5]]), 7 << 8);
        assert_eq!(buf[20..28], [8, 0, 1, 0, b'a', b'b', b'c', 0]);
    }

    #[test]
    fn packets_attribute_is_found_among_others() {
        let mut payload = vec![8, 0, 1, 0, b'a', b'b', 0, 0];
        payload.extend_from_slice(&[12, 0, 2, 0]);
        payload.extend_from_slice(&42u64.to_be_bytes());
        assert_eq!(packets_attr(&payload), Some(42));
        assert_eq!(packets_attr(&payload[..8]), None);
    }

    #[test]
    fn names_longer_than_the_kernel_allows_are_refused_locally() {
        let err = request(NFNL_MSG_ACCT_GET, NLM_F_REQUEST, &"x".repeat(32))
            .err()
            .map(|e| e.kind());
        assert_eq!(err, Some(io::ErrorKind::InvalidInput));
    }
}

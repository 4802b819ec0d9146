//! The ctnetlink wire format (pure): requests encoded into bytes, replies
//! decoded from bytes. Damaged replies decode to errors, never panic.
//!
//! A message is a netlink header, an `nfgenmsg` (family, version, resource
//! id) and attributes; attribute headers are in host byte order, their
//! payloads in network byte order.

use crate::flow::{Flow, Tuple};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `NFNL_SUBSYS_CTNETLINK`.
const NFNL_SUBSYS_CTNETLINK: u16 = 1;
/// `IPCTNL_MSG_CT_NEW`: one entry of a dump.
const IPCTNL_MSG_CT_NEW: u16 = 0;
/// `IPCTNL_MSG_CT_GET`.
const IPCTNL_MSG_CT_GET: u16 = 1;
/// `IPCTNL_MSG_CT_DELETE`.
const IPCTNL_MSG_CT_DELETE: u16 = 2;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_DUMP: u16 = 0x300;
const NLA_F_NESTED: u16 = 0x8000;
const NLA_TYPE_MASK: u16 = 0x3fff;

const NLMSG_HDRLEN: usize = 16;
const NFGENMSG_LEN: usize = 4;

const CTA_TUPLE_ORIG: u16 = 1;
const CTA_TUPLE_REPLY: u16 = 2;
const CTA_ZONE: u16 = 18;
const CTA_TUPLE_IP: u16 = 1;
const CTA_TUPLE_PROTO: u16 = 2;
const CTA_IP_V4_SRC: u16 = 1;
const CTA_IP_V4_DST: u16 = 2;
const CTA_IP_V6_SRC: u16 = 3;
const CTA_IP_V6_DST: u16 = 4;
const CTA_PROTO_NUM: u16 = 1;
const CTA_PROTO_SRC_PORT: u16 = 2;
const CTA_PROTO_DST_PORT: u16 = 3;

/// `AF_INET`.
pub const AF_INET: u8 = 2;
/// `AF_INET6`.
pub const AF_INET6: u8 = 10;

/// A reply the kernel sent, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// One conntrack entry of a dump.
    Flow(Flow),
    /// The end of a dump.
    Done,
    /// An ack (`errno` 0) or an error (`errno` > 0) for request `seq`.
    Ack {
        /// The sequence number of the request it answers.
        seq: u32,
        /// 0 for success, else the positive errno.
        errno: i32,
    },
    /// Another message (ignored).
    Other,
}

/// Why a reply could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed ctnetlink reply: {0}")]
pub struct DecodeError(pub String);

fn bad(reason: impl Into<String>) -> DecodeError {
    DecodeError(reason.into())
}

const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// The dump request for every entry of `family` (`AF_INET`/`AF_INET6`,
/// or 0 for both).
pub fn dump_request(family: u8, seq: u32) -> Vec<u8> {
    let mut buf = Vec::with_capacity(NLMSG_HDRLEN + NFGENMSG_LEN);
    let start = begin_message(&mut buf, IPCTNL_MSG_CT_GET, NLM_F_REQUEST | NLM_F_DUMP, seq, family);
    end_message(&mut buf, start);
    buf
}

/// Appends to `buf` the request deleting the entry whose original tuple
/// (and zone) is `flow`'s, with an ack asked for.
pub fn push_delete(buf: &mut Vec<u8>, flow: &Flow, seq: u32) {
    let family = if flow.orig.src.is_ipv4() { AF_INET } else { AF_INET6 };
    let start = begin_message(buf, IPCTNL_MSG_CT_DELETE, NLM_F_REQUEST | NLM_F_ACK, seq, family);
    push_tuple(buf, CTA_TUPLE_ORIG, &flow.orig);
    if flow.zone != 0 {
        push_attr(buf, CTA_ZONE, &flow.zone.to_be_bytes());
    }
    end_message(buf, start);
}

fn begin_message(buf: &mut Vec<u8>, msg: u16, flags: u16, seq: u32, family: u8) -> usize {
    let start = buf.len();
    buf.extend_from_slice(&0u32.to_ne_bytes());
    buf.extend_from_slice(&(NFNL_SUBSYS_CTNETLINK << 8 | msg).to_ne_bytes());
    buf.extend_from_slice(&flags.to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes());
    buf.extend_from_slice(&[family, 0, 0, 0]);
    start
}

fn end_message(buf: &mut [u8], start: usize) {
    let len = (buf.len() - start) as u32;
    buf[start..start + 4].copy_from_slice(&len.to_ne_bytes());
}

fn push_tuple(buf: &mut Vec<u8>, kind: u16, tuple: &Tuple) {
    let outer = begin_nested(buf, kind);
    let ip = begin_nested(buf, CTA_TUPLE_IP);
    match (tuple.src, tuple.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            push_attr(buf, CTA_IP_V4_SRC, &s.octets());
            push_attr(buf, CTA_IP_V4_DST, &d.octets());
        }
        (s, d) => {
            push_attr(buf, CTA_IP_V6_SRC, &v6(s).octets());
            push_attr(buf, CTA_IP_V6_DST, &v6(d).octets());
        }
    }
    end_nested(buf, ip);
    let proto = begin_nested(buf, CTA_TUPLE_PROTO);
    push_attr(buf, CTA_PROTO_NUM, &[tuple.proto]);
    push_attr(buf, CTA_PROTO_SRC_PORT, &tuple.sport.to_be_bytes());
    push_attr(buf, CTA_PROTO_DST_PORT, &tuple.dport.to_be_bytes());
    end_nested(buf, proto);
    end_nested(buf, outer);
}

fn v6(ip: IpAddr) -> Ipv6Addr {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

fn push_attr(buf: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    buf.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(payload);
    buf.resize(align4(buf.len()), 0);
}

fn begin_nested(buf: &mut Vec<u8>, kind: u16) -> usize {
    let start = buf.len();
    buf.extend_from_slice(&0u16.to_ne_bytes());
    buf.extend_from_slice(&(kind | NLA_F_NESTED).to_ne_bytes());
    start
}

fn end_nested(buf: &mut [u8], start: usize) {
    let len = (buf.len() - start) as u16;
    buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
}

/// Decodes every message of one datagram the kernel sent.
pub fn parse_replies(mut data: &[u8]) -> Result<Vec<Reply>, DecodeError> {
    let mut replies = Vec::new();
    while !data.is_empty() {
        let header = data.get(..NLMSG_HDRLEN).ok_or_else(|| bad("truncated netlink header"))?;
        let len = u32_ne(&header[0..4]) as usize;
        let body = data.get(NLMSG_HDRLEN..len).ok_or_else(|| bad(format!("netlink message length {len}")))?;
        let (kind, seq) = (u16_ne(&header[4..6]), u32_ne(&header[8..12]));
        replies.push(parse_message(kind, seq, body)?);
        data = data.get(align4(len)..).unwrap_or(&[]);
    }
    Ok(replies)
}

fn parse_message(kind: u16, seq: u32, body: &[u8]) -> Result<Reply, DecodeError> {
    match kind {
        NLMSG_DONE => Ok(Reply::Done),
        NLMSG_ERROR => {
            let code = body.get(..4).ok_or_else(|| bad("truncated netlink error"))?;
            let errno = i32::from_ne_bytes([code[0], code[1], code[2], code[3]]).saturating_neg();
            let orig_seq = body.get(12..16).map_or(seq, u32_ne);
            Ok(Reply::Ack { seq: orig_seq, errno })
        }
        k if k == (NFNL_SUBSYS_CTNETLINK << 8 | IPCTNL_MSG_CT_NEW) => {
            let attrs = body.get(NFGENMSG_LEN..).ok_or_else(|| bad("truncated nfgenmsg"))?;
            parse_flow(attrs).map(Reply::Flow)
        }
        _ => Ok(Reply::Other),
    }
}

fn parse_flow(data: &[u8]) -> Result<Flow, DecodeError> {
    let (mut orig, mut reply, mut zone) = (None, None, 0);
    for attr in Attrs(data) {
        let (kind, value) = attr?;
        match kind {
            CTA_TUPLE_ORIG => orig = Some(parse_tuple(value)?),
            CTA_TUPLE_REPLY => reply = Some(parse_tuple(value)?),
            CTA_ZONE => zone = u16_be(value)?,
            _ => {}
        }
    }
    match (orig, reply) {
        (Some(orig), Some(reply)) => Ok(Flow { orig, reply, zone }),
        _ => Err(bad("conntrack entry without both tuples")),
    }
}

fn parse_tuple(data: &[u8]) -> Result<Tuple, DecodeError> {
    let (mut src, mut dst, mut proto, mut sport, mut dport) = (None, None, None, 0, 0);
    for attr in Attrs(data) {
        let (kind, value) = attr?;
        match kind {
            CTA_TUPLE_IP => {
                for ip in Attrs(value) {
                    let (kind, value) = ip?;
                    match kind {
                        CTA_IP_V4_SRC => src = Some(ipv4(value)?),
                        CTA_IP_V4_DST => dst = Some(ipv4(value)?),
                        CTA_IP_V6_SRC => src = Some(ipv6(value)?),
                        CTA_IP_V6_DST => dst = Some(ipv6(value)?),
                        _ => {}
                    }
                }
            }
            CTA_TUPLE_PROTO => {
                for p in Attrs(value) {
                    let (kind, value) = p?;
                    match kind {
                        CTA_PROTO_NUM => proto = Some(*value.first().ok_or_else(|| bad("empty protocol"))?),
                        CTA_PROTO_SRC_PORT => sport = u16_be(value)?,
                        CTA_PROTO_DST_PORT => dport = u16_be(value)?,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    match (proto, src, dst) {
        (Some(proto), Some(src), Some(dst)) => Ok(Tuple { proto, src, dst, sport, dport }),
        _ => Err(bad("tuple without protocol or addresses")),
    }
}

/// The attributes of a payload: (type without flags, value).
struct Attrs<'a>(&'a [u8]);

impl<'a> Iterator for Attrs<'a> {
    type Item = Result<(u16, &'a [u8]), DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let item = match self.0.get(..4) {
            None => Err(bad("truncated attribute header")),
            Some(h) => {
                let (len, kind) = (u16_ne(&h[0..2]) as usize, u16_ne(&h[2..4]) & NLA_TYPE_MASK);
                match self.0.get(4..len).filter(|_| len >= 4) {
                    None => Err(bad(format!("attribute {kind} of length {len}"))),
                    Some(value) => {
                        self.0 = self.0.get(align4(len)..).unwrap_or(&[]);
                        return Some(Ok((kind, value)));
                    }
                }
            }
        };
        self.0 = &[];
        Some(item)
    }
}

fn u16_ne(b: &[u8]) -> u16 {
    u16::from_ne_bytes([b[0], b[1]])
}

fn u32_ne(b: &[u8]) -> u32 {
    u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
}

fn u16_be(v: &[u8]) -> Result<u16, DecodeError> {
    <[u8; 2]>::try_from(v).map(u16::from_be_bytes).map_err(|_| bad("16-bit value of wrong length"))
}

fn ipv4(v: &[u8]) -> Result<IpAddr, DecodeError> {
    <[u8; 4]>::try_from(v).map(|o| IpAddr::V4(Ipv4Addr::from(o))).map_err(|_| bad("IPv4 address of wrong length"))
}

fn ipv6(v: &[u8]) -> Result<IpAddr, DecodeError> {
    <[u8; 16]>::try_from(v).map(|o| IpAddr::V6(Ipv6Addr::from(o))).map_err(|_| bad("IPv6 address of wrong length"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

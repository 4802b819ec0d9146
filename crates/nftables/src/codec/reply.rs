//! The kernel's replies: nf_tables objects (dumps), errors and acks
//! (`NLMSG_ERROR`, naming the sequence number of the message they answer),
//! and the end of a dump.

use super::attrs::{attrs, string};
use super::constants::*;
use netlink_packet_core::{DecodeError, NetlinkBuffer};

/// `NLM_F_CAPPED`: the error carries only the original header.
const NLM_F_CAPPED: u16 = 0x100;

/// One reply message.
#[derive(Debug)]
pub(crate) enum Reply<'a> {
    /// An nf_tables object in answer to request `seq`: its `NFT_MSG_*`,
    /// family and attributes.
    Object {
        seq: u32,
        msg: u16,
        family: u8,
        attrs: &'a [u8],
    },
    /// An error (code < 0) or an ack (code 0) for message `seq`.
    Ack {
        seq: u32,
        code: i32,
        detail: Option<String>,
    },
    /// The end of the dump requested as `seq`.
    Done { seq: u32 },
}

/// Every message in a buffer read from the socket.
pub(crate) fn parse_replies(mut buf: &[u8]) -> Result<Vec<Reply<'_>>, DecodeError> {
    let mut out = Vec::new();
    while buf.len() >= 16 {
        let msg = NetlinkBuffer::new_checked(buf)?;
        let len = msg.length() as usize;
        let (ty, flags, seq) = (msg.message_type(), msg.flags(), msg.sequence_number());
        let payload = &buf[16..len];
        match ty {
            NLMSG_DONE => out.push(Reply::Done { seq }),
            NLMSG_ERROR => out.push(parse_ack(flags, payload)?),
            _ if ty >> 8 == NFNL_SUBSYS_NFTABLES && payload.len() >= 4 => out.push(Reply::Object {
                seq,
                msg: ty & 0xff,
                family: payload[0],
                attrs: &payload[4..],
            }),
            _ => {}
        }
        buf = buf.get(len.div_ceil(4) * 4..).unwrap_or_default();
    }
    Ok(out)
}

fn parse_ack(flags: u16, payload: &[u8]) -> Result<Reply<'_>, DecodeError> {
    let short = || DecodeError::from("truncated netlink error message");
    let code = i32::from_ne_bytes(
        payload
            .get(..4)
            .ok_or_else(short)?
            .try_into()
            .map_err(|_| short())?,
    );
    let orig = payload.get(4..20).ok_or_else(short)?;
    let seq = u32::from_ne_bytes(orig[8..12].try_into().map_err(|_| short())?);
    let orig_len = u32::from_ne_bytes(orig[0..4].try_into().map_err(|_| short())?) as usize;
    let detail = if flags & NLM_F_ACK_TLVS != 0 {
        let tlv_start = if flags & NLM_F_CAPPED != 0 || code == 0 {
            20
        } else {
            4 + orig_len.div_ceil(4) * 4
        };
        payload.get(tlv_start..).and_then(extack_message)
    } else {
        None
    };
    Ok(Reply::Ack { seq, code, detail })
}

fn extack_message(tlvs: &[u8]) -> Option<String> {
    attrs(tlvs)
        .filter_map(Result::ok)
        .find(|(k, _)| *k == NLMSGERR_ATTR_MSG)
        .and_then(|(_, v)| string(v).ok())
}

//! `NFTA_DATA_*`: a value or a verdict (with its chain, by name).

use super::attrs::{AttrWriter, attrs, be32, string};
use super::constants::*;
use crate::Verdict;
use netlink_packet_core::DecodeError;

/// Writes a nested `NFTA_DATA_VALUE`.
pub(crate) fn emit_value(w: &mut AttrWriter<'_>, kind: u16, value: &[u8]) {
    w.nested(kind, |w| w.bytes(NFTA_DATA_VALUE, value));
}

/// Writes a nested `NFTA_DATA_VERDICT`.
pub(crate) fn emit_verdict(w: &mut AttrWriter<'_>, kind: u16, verdict: &Verdict) {
    w.nested(kind, |w| {
        w.nested(NFTA_DATA_VERDICT, |w| {
            let (code, chain) = verdict_code(verdict);
            w.u32(NFTA_VERDICT_CODE, code as u32);
            if let Some(chain) = chain {
                w.str(NFTA_VERDICT_CHAIN, chain);
            }
        })
    });
}

fn verdict_code(verdict: &Verdict) -> (i32, Option<&str>) {
    match verdict {
        Verdict::Accept => (NF_ACCEPT, None),
        Verdict::Drop => (NF_DROP, None),
        Verdict::Continue => (NFT_CONTINUE, None),
        Verdict::Return => (NFT_RETURN, None),
        Verdict::Jump(c) => (NFT_JUMP, Some(c)),
        Verdict::Goto(c) => (NFT_GOTO, Some(c)),
    }
}

/// What an `NFTA_DATA` attribute holds.
pub(crate) enum Data {
    Value(Vec<u8>),
    Verdict(Verdict),
}

/// Parses the content of a nested `NFTA_DATA`.
pub(crate) fn parse_data(payload: &[u8]) -> Result<Data, DecodeError> {
    for attr in attrs(payload) {
        let (kind, value) = attr?;
        match kind {
            NFTA_DATA_VALUE => return Ok(Data::Value(value.to_vec())),
            NFTA_DATA_VERDICT => return parse_verdict(value).map(Data::Verdict),
            _ => {}
        }
    }
    Err(DecodeError::from("NFTA_DATA without value or verdict"))
}

/// The value of a nested `NFTA_DATA` that must hold a value.
pub(crate) fn parse_value(payload: &[u8]) -> Result<Vec<u8>, DecodeError> {
    match parse_data(payload)? {
        Data::Value(v) => Ok(v),
        Data::Verdict(_) => Err(DecodeError::from("expected a value, found a verdict")),
    }
}

fn parse_verdict(payload: &[u8]) -> Result<Verdict, DecodeError> {
    let mut code = None;
    let mut chain = None;
    for attr in attrs(payload) {
        let (kind, value) = attr?;
        match kind {
            NFTA_VERDICT_CODE => code = Some(be32(value)? as i32),
            NFTA_VERDICT_CHAIN => chain = Some(string(value)?),
            _ => {}
        }
    }
    let chain = || {
        chain
            .clone()
            .ok_or_else(|| DecodeError::from("jump or goto without chain name"))
    };
    Ok(match code {
        Some(NF_ACCEPT) => Verdict::Accept,
        Some(NF_DROP) => Verdict::Drop,
        Some(NFT_CONTINUE) => Verdict::Continue,
        Some(NFT_RETURN) => Verdict::Return,
        Some(NFT_JUMP) => Verdict::Jump(chain()?),
        Some(NFT_GOTO) => Verdict::Goto(chain()?),
        Some(NFT_BREAK) => Verdict::Continue,
        other => return Err(DecodeError::from(format!("unknown verdict code {other:?}"))),
    })
}

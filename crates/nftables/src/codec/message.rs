//! nf_tables messages: a netlink header, the `nfgenmsg` header and the
//! object's attributes, for each kind of object; and the same decoded.

use super::attrs::{AttrWriter, attrs, be32, be64, string};
use super::constants::*;
use super::data::{Data, emit_value, emit_verdict, parse_data};
use super::expr::{emit_exprs, parse_exprs};
use super::userdata;
use crate::chain::{BaseChain, ChainType, Hook, Policy};
use crate::set::{ElementData, SetFlags};
use crate::{Chain, DataType, Element, Family, Rule, Set, SetRef, Table, Value};
use netlink_packet_core::DecodeError;

/// The netlink message type of nf_tables message `msg` (`NFT_MSG_*`).
pub(crate) fn nft_type(msg: u16) -> u16 {
    (NFNL_SUBSYS_NFTABLES << 8) | msg
}

/// Starts a message of netlink type `ty`; [`end_message`] fills in its
/// length.
pub(crate) fn begin_message(
    buf: &mut Vec<u8>,
    ty: u16,
    flags: u16,
    seq: u32,
    family: u8,
    res_id: u16,
) -> usize {
    let start = buf.len();
    buf.extend_from_slice(&0u32.to_ne_bytes());
    buf.extend_from_slice(&ty.to_ne_bytes());
    buf.extend_from_slice(&(flags | NLM_F_REQUEST).to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes());
    buf.push(family);
    buf.push(NFNETLINK_V0);
    buf.extend_from_slice(&res_id.to_be_bytes());
    start
}

/// Sets the length of the message begun at `start`.
pub(crate) fn end_message(buf: &mut [u8], start: usize) {
    let len = (buf.len() - start) as u32;
    buf[start..start + 4].copy_from_slice(&len.to_ne_bytes());
}

/// `NEWTABLE`/`DELTABLE`/`GETTABLE` attributes.
pub(crate) fn emit_table(w: &mut AttrWriter<'_>, table: &Table, full: bool) {
    w.str(NFTA_TABLE_NAME, &table.name);
    if full {
        w.u32(NFTA_TABLE_FLAGS, table.flags);
        if let Some(c) = &table.comment {
            w.bytes(NFTA_TABLE_USERDATA, &userdata::comment(UDATA_COMMENT, c));
        }
    }
}

/// `NEWCHAIN` attributes (or, without `full`, just what names it).
pub(crate) fn emit_chain(w: &mut AttrWriter<'_>, table: &str, chain: &Chain, full: bool) {
    w.str(NFTA_CHAIN_TABLE, table);
    w.str(NFTA_CHAIN_NAME, &chain.name);
    if !full {
        return;
    }
    if let Some(base) = &chain.base {
        w.nested(NFTA_CHAIN_HOOK, |w| {
            w.u32(NFTA_HOOK_HOOKNUM, base.hook.number());
            w.u32(NFTA_HOOK_PRIORITY, base.priority as u32);
        });
        w.u32(
            NFTA_CHAIN_POLICY,
            if base.policy == Policy::Accept { 1 } else { 0 },
        );
        w.str(NFTA_CHAIN_TYPE, base.kind.name());
    }
    if let Some(c) = &chain.comment {
        w.bytes(NFTA_CHAIN_USERDATA, &userdata::comment(UDATA_COMMENT, c));
    }
}

/// `NEWRULE` attributes; the chain is named, never referenced by id.
pub(crate) fn emit_rule(w: &mut AttrWriter<'_>, table: &str, rule: &Rule) {
    w.str(NFTA_RULE_TABLE, table);
    w.str(NFTA_RULE_CHAIN, &rule.chain);
    if let Some(h) = rule.handle {
        w.u64(NFTA_RULE_HANDLE, h);
    }
    w.nested(NFTA_RULE_EXPRESSIONS, |w| emit_exprs(w, &rule.exprs));
    if let Some(c) = &rule.comment {
        w.bytes(NFTA_RULE_USERDATA, &userdata::comment(UDATA_COMMENT, c));
    }
}

/// `DELRULE` attributes: the rule by its handle.
pub(crate) fn emit_rule_handle(w: &mut AttrWriter<'_>, table: &str, chain: &str, handle: u64) {
    w.str(NFTA_RULE_TABLE, table);
    w.str(NFTA_RULE_CHAIN, chain);
    w.u64(NFTA_RULE_HANDLE, handle);
}

/// `NEWSET` attributes. The kernel wants an id on every new set; a
/// named set without one gets `auto_id`.
pub(crate) fn emit_set(w: &mut AttrWriter<'_>, table: &str, set: &Set, auto_id: u32) {
    w.str(NFTA_SET_TABLE, table);
    w.str(NFTA_SET_NAME, &set.name);
    w.u32(NFTA_SET_ID, set.id.unwrap_or(auto_id));
    w.u32(NFTA_SET_FLAGS, set.flags.0);
    w.u32(NFTA_SET_KEY_TYPE, DataType::concat_id(&set.key));
    w.u32(NFTA_SET_KEY_LEN, DataType::concat_len(&set.key));
    if let Some(data) = &set.data {
        if set.is_verdict_map() {
            w.u32(NFTA_SET_DATA_TYPE, NFT_DATA_VERDICT);
        } else {
            w.u32(NFTA_SET_DATA_TYPE, DataType::concat_id(data));
            w.u32(NFTA_SET_DATA_LEN, DataType::concat_len(data));
        }
    }
    if let Some(t) = set.timeout_ms {
        w.u64(NFTA_SET_TIMEOUT, t);
    }
    let concat = set.key.len() > 1 && set.flags.contains(SetFlags::INTERVAL);
    if set.size.is_some() || concat {
        w.nested(NFTA_SET_DESC, |w| {
            if let Some(size) = set.size {
                w.u32(NFTA_SET_DESC_SIZE, size);
            }
            if concat {
                w.nested(NFTA_SET_DESC_CONCAT, |w| {
                    for ty in &set.key {
                        w.nested(NFTA_LIST_ELEM, |w| w.u32(NFTA_SET_FIELD_LEN, ty.byte_len()));
                    }
                });
            }
        });
    }
    let udata = userdata::set_userdata(
        &set.key,
        set.data.as_deref(),
        set.type_of,
        set.comment.as_deref(),
    );
    if !udata.is_empty() {
        w.bytes(NFTA_SET_USERDATA, &udata);
    }
}

/// Which set an element message names.
#[derive(Debug)]
pub(crate) enum ElementTarget<'a> {
    /// By name (and id, if the reference has one).
    Set(&'a SetRef),
    /// By id alone: the set the message just before created.
    NewSet(u32),
}

/// `NEWSETELEM`/`DELSETELEM` attributes for `elements` of `set`.
pub(crate) fn emit_elements(
    w: &mut AttrWriter<'_>,
    table: &str,
    set: &ElementTarget<'_>,
    elements: &[Element],
    full: bool,
) {
    w.str(NFTA_SET_ELEM_LIST_TABLE, table);
    match set {
        ElementTarget::Set(set) => {
            w.str(NFTA_SET_ELEM_LIST_SET, &set.name);
            if let Some(id) = set.id {
                w.u32(NFTA_SET_ELEM_LIST_SET_ID, id);
            }
        }
        ElementTarget::NewSet(id) => w.u32(NFTA_SET_ELEM_LIST_SET_ID, *id),
    }
    w.nested(NFTA_SET_ELEM_LIST_ELEMENTS, |w| {
        for e in elements {
            w.nested(NFTA_LIST_ELEM, |w| emit_element(w, e, full));
        }
    });
}

fn emit_element(w: &mut AttrWriter<'_>, e: &Element, full: bool) {
    emit_value(w, NFTA_SET_ELEM_KEY, &Value::concat_bytes(&e.key));
    if let Some(end) = e.key_end() {
        emit_value(w, NFTA_SET_ELEM_KEY_END, &Value::concat_bytes(end));
    }
    if e.is_interval_end() {
        w.u32(NFTA_SET_ELEM_FLAGS, NFT_SET_ELEM_INTERVAL_END);
    }
    if !full {
        return;
    }
    match &e.data {
        Some(ElementData::Verdict(v)) => emit_verdict(w, NFTA_SET_ELEM_DATA, v),
        Some(ElementData::Values(v)) => emit_value(w, NFTA_SET_ELEM_DATA, &Value::concat_bytes(v)),
        None => {}
    }
    if let Some(t) = e.timeout_ms() {
        w.u64(NFTA_SET_ELEM_TIMEOUT, t);
    }
    if let Some(c) = e.comment() {
        w.bytes(NFTA_SET_ELEM_USERDATA, &userdata::comment(UDATA_COMMENT, c));
    }
}

/// A table from a `NEWTABLE` message's attributes.
pub(crate) fn parse_table(family: u8, payload: &[u8]) -> Result<Table, DecodeError> {
    let family = Family::from_nfproto(family)
        .ok_or_else(|| DecodeError::from(format!("unknown family {family}")))?;
    let mut table = Table::new(family, "");
    for attr in attrs(payload) {
        let (kind, value) = attr?;
        match kind {
            NFTA_TABLE_NAME => table.name = string(value)?,
            NFTA_TABLE_FLAGS => table.flags = be32(value)?,
            NFTA_TABLE_USERDATA => table.comment = userdata::parse_comment(UDATA_COMMENT, value),
            _ => {}
        }
    }
    Ok(table)
}

/// A chain (and its table's name) from a `NEWCHAIN` message.
pub(crate) fn parse_chain(payload: &[u8]) -> Result<(String, Chain), DecodeError> {
    let (mut table, mut chain) = (String::new(), Chain::regular(""));
    let (mut hook, mut kind, mut policy) = (None, None, Policy::Accept);
    for attr in attrs(payload) {
        let (k, value) = attr?;
        match k {
            NFTA_CHAIN_TABLE => table = string(value)?,
            NFTA_CHAIN_NAME => chain.name = string(value)?,
            NFTA_CHAIN_HOOK => hook = Some(parse_hook(value)?),
            NFTA_CHAIN_TYPE => kind = ChainType::from_name(&string(value)?),
            NFTA_CHAIN_POLICY => {
                policy = if be32(value)? == 0 {
                    Policy::Drop
                } else {
                    Policy::Accept
                }
            }
            NFTA_CHAIN_USERDATA => chain.comment = userdata::parse_comment(UDATA_COMMENT, value),
            _ => {}
        }
    }
    if let (Some((hook, priority)), Some(kind)) = (hook, kind) {
        chain.base = Some(BaseChain {
            kind,
            hook,
            priority,
            policy,
        });
    }
    Ok((table, chain))
}

fn parse_hook(payload: &[u8]) -> Result<(Hook, i32), DecodeError> {
    let (mut hook, mut priority) = (None, 0);
    for attr in attrs(payload) {
        let (k, value) = attr?;
        match k {
            NFTA_HOOK_HOOKNUM => hook = Hook::from_number(be32(value)?),
            NFTA_HOOK_PRIORITY => priority = be32(value)? as i32,
            _ => {}
        }
    }
    Ok((
        hook.ok_or_else(|| DecodeError::from("unknown hook"))?,
        priority,
    ))
}

/// A rule (and its table's name) from a `NEWRULE` message.
pub(crate) fn parse_rule(payload: &[u8]) -> Result<(String, Rule), DecodeError> {
    let (mut table, mut rule) = (String::new(), Rule::new("", Vec::new()));
    for attr in attrs(payload) {
        let (k, value) = attr?;
        match k {
            NFTA_RULE_TABLE => table = string(value)?,
            NFTA_RULE_CHAIN => rule.chain = string(value)?,
            NFTA_RULE_HANDLE => rule.handle = Some(be64(value)?),
            NFTA_RULE_EXPRESSIONS => rule.exprs = parse_exprs(value)?,
            NFTA_RULE_USERDATA => rule.comment = userdata::parse_comment(UDATA_COMMENT, value),
            _ => {}
        }
    }
    Ok((table, rule))
}

/// A set (and its table's name) from a `NEWSET` message.
pub(crate) fn parse_set(payload: &[u8]) -> Result<(String, Set), DecodeError> {
    let (mut table, mut set) = (String::new(), Set::new("", Vec::new()));
    let mut data_type = None;
    for attr in attrs(payload) {
        let (k, value) = attr?;
        match k {
            NFTA_SET_TABLE => table = string(value)?,
            NFTA_SET_NAME => set.name = string(value)?,
            NFTA_SET_ID => set.id = Some(be32(value)?),
            NFTA_SET_FLAGS => set.flags = SetFlags(be32(value)?),
            NFTA_SET_KEY_TYPE => set.key = split_type(be32(value)?)?,
            NFTA_SET_DATA_TYPE => data_type = Some(be32(value)?),
            NFTA_SET_TIMEOUT => set.timeout_ms = Some(be64(value)?).filter(|t| *t != 0),
            NFTA_SET_DESC => set.size = parse_desc_size(value)?,
            NFTA_SET_USERDATA => {
                set.comment = userdata::parse_comment(UDATA_SET_COMMENT, value);
                set.type_of = userdata::parse_type_of(value);
            }
            _ => {}
        }
    }
    // only a new anonymous set's id names it (in an encoded batch)
    if !set.name.contains('%') {
        set.id = None;
    }
    set.data = match data_type {
        Some(NFT_DATA_VERDICT) => Some(vec![DataType::Verdict]),
        Some(t) => Some(split_type(t)?),
        None => None,
    };
    Ok((table, set))
}

fn split_type(id: u32) -> Result<Vec<DataType>, DecodeError> {
    DataType::split_concat_id(id)
        .ok_or_else(|| DecodeError::from(format!("unknown set data type {id:#x}")))
}

fn parse_desc_size(payload: &[u8]) -> Result<Option<u32>, DecodeError> {
    for attr in attrs(payload) {
        let (k, value) = attr?;
        if k == NFTA_SET_DESC_SIZE {
            return Ok(Some(be32(value)?));
        }
    }
    Ok(None)
}

/// The elements of a `NEWSETELEM` message, typed by `set`'s key and data.
pub(crate) fn parse_elements(set: &Set, payload: &[u8]) -> Result<Vec<Element>, DecodeError> {
    let mut out = Vec::new();
    for attr in attrs(payload) {
        let (k, value) = attr?;
        if k == NFTA_SET_ELEM_LIST_ELEMENTS {
            for elem in attrs(value) {
                let (k, value) = elem?;
                if k == NFTA_LIST_ELEM {
                    out.push(parse_element(set, value)?);
                }
            }
        }
    }
    Ok(out)
}

fn parse_element(set: &Set, payload: &[u8]) -> Result<Element, DecodeError> {
    let mut e = Element::new(Vec::new());
    let typed = |types: &[DataType], bytes: Vec<u8>| {
        Value::split_concat(types, &bytes).ok_or_else(|| {
            DecodeError::from(format!(
                "element of set {} does not match its type",
                set.name
            ))
        })
    };
    for attr in attrs(payload) {
        let (k, value) = attr?;
        match k {
            NFTA_SET_ELEM_KEY => e.key = typed(&set.key, super::data::parse_value(value)?)?,
            NFTA_SET_ELEM_KEY_END => {
                e.set_key_end(Some(typed(&set.key, super::data::parse_value(value)?)?))
            }
            NFTA_SET_ELEM_FLAGS => {
                e.set_interval_end(be32(value)? & NFT_SET_ELEM_INTERVAL_END != 0)
            }
            NFTA_SET_ELEM_TIMEOUT => e.set_timeout_ms(Some(be64(value)?)),
            NFTA_SET_ELEM_USERDATA => e.set_comment(userdata::parse_comment(UDATA_COMMENT, value)),
            NFTA_SET_ELEM_DATA => {
                e.data = Some(match parse_data(value)? {
                    Data::Verdict(v) => ElementData::Verdict(v),
                    Data::Value(bytes) => {
                        ElementData::Values(typed(set.data.as_deref().unwrap_or_default(), bytes)?)
                    }
                })
            }
            _ => {}
        }
    }
    Ok(e)
}

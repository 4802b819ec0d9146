//! Reading our table back: the kernel's dump messages, fed one by one,
//! become a [`TableContents`]. Messages of any other table (or family)
//! are skipped before their attributes are parsed.

use crate::codec::attrs::{attrs, be32, string};
use crate::codec::constants::*;
use crate::codec::message;
use crate::codec::reply::{Reply, parse_replies};
use crate::{Chain, Element, Error, Family, Rule, Set, Table};
use netlink_packet_core::DecodeError;
use std::collections::BTreeMap;

/// Everything our table holds, read back from the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableContents {
    /// The table.
    pub table: Table,
    /// Its chains, in the kernel's order.
    pub chains: Vec<Chain>,
    /// Its rules, chain by chain, in order, with handles.
    pub rules: Vec<Rule>,
    /// Its sets and maps (anonymous ones too, named `__set<n>`).
    pub sets: Vec<Set>,
    /// Each set's elements, by [`TableContents::set_key`].
    pub elements: BTreeMap<String, Vec<Element>>,
}

impl TableContents {
    /// Decodes table `family name` from raw reply buffers as read from
    /// the socket (see [`crate::NftSocket::capture`]); `None` if they hold
    /// no such table.
    pub fn decode(
        family: Family,
        name: &str,
        buffers: &[Vec<u8>],
    ) -> Result<Option<TableContents>, Error> {
        let mut reader = TableReader::new(family, name);
        for buf in buffers {
            let replies = parse_replies(buf).map_err(|e| reader.error(e))?;
            for reply in replies {
                if let Reply::Object {
                    msg, family, attrs, ..
                } = reply
                {
                    reader
                        .feed(msg, family, attrs)
                        .map_err(|e| reader.error(e))?;
                }
            }
        }
        Ok(reader.finish())
    }

    /// The key of `set` in [`TableContents::elements`]: its name, or for a
    /// new anonymous set of an encoded batch `__set%d#<id>`.
    pub fn set_key(set: &Set) -> String {
        match set.id {
            Some(id) => format!("{}#{id}", set.name),
            None => set.name.clone(),
        }
    }

    /// The table made of `skeleton` (the table, its chains, the named
    /// sets with their elements) and `pieces` (the rules of its chains
    /// with their anonymous sets, and elements of named sets, a set's
    /// perhaps in several pieces; see `render::Ruleset::into_pieces`,
    /// `render::Lean::into_pieces`).
    pub fn from_pieces(
        mut skeleton: TableContents,
        pieces: impl Iterator<Item = TableContents>,
    ) -> Self {
        for piece in pieces {
            skeleton.rules.extend(piece.rules);
            skeleton.sets.extend(piece.sets);
            for (set, elements) in piece.elements {
                skeleton.elements.entry(set).or_default().extend(elements);
            }
        }
        skeleton
    }

    /// The rules of chain `name`, in order.
    pub fn rules_of<'a>(&'a self, chain: &'a str) -> impl Iterator<Item = &'a Rule> + 'a {
        self.rules.iter().filter(move |r| r.chain == chain)
    }
}

/// Whether a dump message's object belongs to table `name`: every kind
/// of object names its table in attribute 1.
pub(crate) fn names_table(payload: &[u8], name: &str) -> Result<bool, DecodeError> {
    for attr in attrs(payload) {
        let (kind, value) = attr?;
        if kind == 1 {
            return Ok(value.strip_suffix(&[0]).unwrap_or(value) == name.as_bytes());
        }
    }
    Ok(false)
}

/// Collects one table's objects from dump messages.
pub(crate) struct TableReader {
    family: Family,
    name: String,
    table: Option<Table>,
    chains: Vec<Chain>,
    rules: Vec<Rule>,
    sets: Vec<Set>,
    elements: BTreeMap<String, Vec<Element>>,
}

impl TableReader {
    pub(crate) fn new(family: Family, name: &str) -> Self {
        Self {
            family,
            name: name.to_string(),
            table: None,
            chains: Vec::new(),
            rules: Vec::new(),
            sets: Vec::new(),
            elements: BTreeMap::new(),
        }
    }

    /// The sets read so far (to dump their elements next).
    pub(crate) fn sets(&self) -> &[Set] {
        &self.sets
    }

    /// Takes one `NEW*` message of a dump.
    pub(crate) fn feed(&mut self, msg: u16, family: u8, payload: &[u8]) -> Result<(), DecodeError> {
        if family != self.family.nfproto() || !self.is_ours(payload)? {
            return Ok(());
        }
        match msg {
            NFT_MSG_NEWTABLE => self.table = Some(message::parse_table(family, payload)?),
            NFT_MSG_NEWCHAIN => self.chains.push(message::parse_chain(payload)?.1),
            NFT_MSG_NEWRULE => self.rules.push(message::parse_rule(payload)?.1),
            NFT_MSG_NEWSET => {
                let set = message::parse_set(payload)?.1;
                self.elements
                    .entry(TableContents::set_key(&set))
                    .or_default();
                self.sets.push(set);
            }
            NFT_MSG_NEWSETELEM => self.feed_elements(payload)?,
            _ => {}
        }
        Ok(())
    }

    fn is_ours(&self, payload: &[u8]) -> Result<bool, DecodeError> {
        names_table(payload, &self.name)
    }

    fn feed_elements(&mut self, payload: &[u8]) -> Result<(), DecodeError> {
        let (mut set_name, mut set_id) = (None, None);
        for attr in attrs(payload) {
            let (kind, value) = attr?;
            match kind {
                NFTA_SET_ELEM_LIST_SET => set_name = Some(string(value)?),
                NFTA_SET_ELEM_LIST_SET_ID => set_id = Some(be32(value)?),
                _ => {}
            }
        }
        // Our batches name the set created by the message just before by
        // its id alone (kernel dumps always name the set).
        let set = match (&set_name, set_id) {
            (Some(name), _) => self
                .sets
                .iter()
                .find(|s| s.name == *name && (s.id.is_none() || s.id == set_id)),
            (None, Some(_)) => self.sets.last(),
            (None, None) => return Err(DecodeError::from("elements without a set name or id")),
        };
        let set = set.ok_or_else(|| {
            DecodeError::from(format!(
                "elements of unknown set {}",
                set_name.unwrap_or_else(|| format!("id {}", set_id.unwrap_or_default()))
            ))
        })?;
        let elements = message::parse_elements(set, payload)?;
        self.elements
            .entry(TableContents::set_key(set))
            .or_default()
            .extend(elements);
        Ok(())
    }

    pub(crate) fn error(&self, e: DecodeError) -> Error {
        Error::Decode {
            operation: format!("list table {} {}", self.family.name(), self.name),
            reason: e.to_string(),
        }
    }

    pub(crate) fn finish(self) -> Option<TableContents> {
        Some(TableContents {
            table: self.table?,
            chains: self.chains,
            rules: self.rules,
            sets: self.sets,
            elements: self.elements,
        })
    }
}

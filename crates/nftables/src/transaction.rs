//! A transaction: the changes one sync makes to one of our tables, in
//! order, encoded as one nf_tables batch (`BATCH_BEGIN` … `BATCH_END`) the
//! kernel applies atomically. Pure: [`crate::NftSocket::apply`] sends it.
//!
//! Rules name their chain by name, never by id: the kernel finds a chain
//! created in the same transaction through its hash table by name, but by
//! walking the whole transaction when named by id (quadratic at scale).

use crate::codec::attrs::AttrWriter;
use crate::codec::constants::*;
use crate::codec::message::*;
use crate::value::concat_text;
use crate::{Chain, Element, Family, Rule, Set, SetRef, Table};

/// Largest value of one nested attribute (lengths are 16 bits); element
/// lists are split into several messages below it.
const MAX_NESTED: usize = 60_000;

/// Ids given to named sets (the kernel requires one on every new set);
/// callers' ids for anonymous sets stay below it.
const AUTO_SET_ID: u32 = 0x4000_0000;

/// Size of each buffer of a batch (one `sendmsg` carries them all).
const CHUNK: usize = 1 << 20;

/// Room kept at the end of a buffer for one more message: a message
/// starts a new buffer when less is left, so a buffer never grows past
/// [`CHUNK`] (which would double its allocation). Element lists are
/// split below [`MAX_NESTED`], so every message fits.
const MESSAGE_ROOM: usize = 64 << 10;

/// One change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `add table` (creates it, or keeps it if it exists).
    AddTable(Table),
    /// `delete table` (fails if it does not exist).
    DeleteTable,
    /// `destroy table` (deletes it if it exists).
    DestroyTable,
    /// `add chain`.
    AddChain(Chain),
    /// `flush chain` (removes its rules).
    FlushChain(String),
    /// `delete chain`.
    DeleteChain(String),
    /// `add rule` (appended to its chain).
    AddRule(Rule),
    /// `delete rule` by handle.
    DeleteRule {
        /// Its chain.
        chain: String,
        /// Its handle.
        handle: u64,
    },
    /// `add set` / `add map`.
    AddSet(Set),
    /// `flush set` (removes its elements).
    FlushSet(String),
    /// `delete set`.
    DeleteSet(String),
    /// `add element`.
    AddElements {
        /// The set (name, and id if it is new in this transaction).
        set: SetRef,
        /// The elements.
        elements: Vec<Element>,
    },
    /// `delete element`.
    DeleteElements {
        /// The set.
        set: SetRef,
        /// The elements (their keys are what counts).
        elements: Vec<Element>,
    },
}

/// The changes to one table, applied all or nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    /// The table's family.
    pub family: Family,
    /// The table's name.
    pub table: String,
    /// The changes, in order.
    pub ops: Vec<Op>,
    /// If set, the kernel refuses the batch (`ERESTART`) when the ruleset
    /// generation is no longer this one: what was read is stale.
    pub generation: Option<u32>,
}

impl Transaction {
    /// An empty transaction on table `family table`.
    pub fn new(family: Family, table: impl Into<String>) -> Self {
        Self {
            family,
            table: table.into(),
            ops: Vec::new(),
            generation: None,
        }
    }

    /// Appends a change.
    pub fn push(&mut self, op: Op) -> &mut Self {
        self.ops.push(op);
        self
    }

    /// Encodes the transaction as a batch whose messages start at
    /// sequence number `first_seq`.
    pub fn encode(&self, first_seq: u32) -> Batch {
        let mut b = BatchBuilder {
            batch: Batch::default(),
            seq: first_seq,
            buf: Vec::with_capacity(CHUNK),
        };
        b.begin(self.generation);
        for (index, op) in self.ops.iter().enumerate() {
            self.encode_op(&mut b, index, op);
        }
        b.end()
    }

    fn encode_op(&self, b: &mut BatchBuilder, index: usize, op: &Op) {
        let (family, table) = (self.family.nfproto(), self.table.as_str());
        match op {
            Op::AddTable(t) => b.message(index, NFT_MSG_NEWTABLE, NLM_F_CREATE, family, |w| {
                emit_table(w, t, true)
            }),
            Op::DeleteTable => b.message(index, NFT_MSG_DELTABLE, 0, family, |w| {
                w.str(NFTA_TABLE_NAME, table)
            }),
            Op::DestroyTable => b.message(index, NFT_MSG_DESTROYTABLE, 0, family, |w| {
                w.str(NFTA_TABLE_NAME, table)
            }),
            Op::AddChain(c) => b.message(index, NFT_MSG_NEWCHAIN, NLM_F_CREATE, family, |w| {
                emit_chain(w, table, c, true)
            }),
            Op::FlushChain(c) => b.message(index, NFT_MSG_DELRULE, 0, family, |w| {
                w.str(NFTA_RULE_TABLE, table);
                w.str(NFTA_RULE_CHAIN, c);
            }),
            Op::DeleteChain(c) => b.message(index, NFT_MSG_DELCHAIN, 0, family, |w| {
                emit_chain(w, table, &Chain::regular(c.as_str()), false)
            }),
            Op::AddRule(r) => b.message(
                index,
                NFT_MSG_NEWRULE,
                NLM_F_CREATE | NLM_F_APPEND,
                family,
                |w| emit_rule(w, table, r),
            ),
            Op::DeleteRule { chain, handle } => b.message(index, NFT_MSG_DELRULE, 0, family, |w| {
                emit_rule_handle(w, table, chain, *handle)
            }),
            Op::AddSet(s) => b.message(index, NFT_MSG_NEWSET, NLM_F_CREATE, family, |w| {
                emit_set(w, table, s, AUTO_SET_ID | index as u32)
            }),
            Op::FlushSet(s) => b.message(index, NFT_MSG_DELSETELEM, 0, family, |w| {
                w.str(NFTA_SET_ELEM_LIST_TABLE, table);
                w.str(NFTA_SET_ELEM_LIST_SET, s);
            }),
            Op::DeleteSet(s) => b.message(index, NFT_MSG_DELSET, 0, family, |w| {
                w.str(NFTA_SET_TABLE, table);
                w.str(NFTA_SET_NAME, s);
            }),
            Op::AddElements { set, elements } => {
                let target = self.element_target(index, set);
                for part in split_elements(elements) {
                    b.message(index, NFT_MSG_NEWSETELEM, NLM_F_CREATE, family, |w| {
                        emit_elements(w, table, &target, part, true)
                    });
                }
            }
            Op::DeleteElements { set, elements } => {
                for part in split_elements(elements) {
                    b.message(index, NFT_MSG_DELSETELEM, 0, family, |w| {
                        emit_elements(w, table, &ElementTarget::Set(set), part, false)
                    });
                }
            }
        }
    }

    /// How the elements added at `index` name their set: by id alone when
    /// the change just before created it. The kernel then finds the set
    /// at the end of its list of this transaction's new sets; by name it
    /// walks every set of the table (quadratic over a cold start).
    fn element_target<'a>(&self, index: usize, set: &'a SetRef) -> ElementTarget<'a> {
        let previous = index.checked_sub(1).and_then(|i| self.ops.get(i));
        match previous {
            Some(Op::AddSet(new)) if new.name == set.name => {
                ElementTarget::NewSet(new.id.unwrap_or(AUTO_SET_ID | (index - 1) as u32))
            }
            _ => ElementTarget::Set(set),
        }
    }

    /// What `op` (the change at `index`) does to which object, for errors:
    /// `add rule to chain ip kube-proxy services: …`.
    pub fn describe(&self, index: usize) -> String {
        let t = format!("{} {}", self.family.name(), self.table);
        match self.ops.get(index) {
            Some(Op::AddTable(_)) => format!("add table {t}"),
            Some(Op::DeleteTable) => format!("delete table {t}"),
            Some(Op::DestroyTable) => format!("destroy table {t}"),
            Some(Op::AddChain(c)) => format!("add chain {t} {}", c.name),
            Some(Op::FlushChain(c)) => format!("flush chain {t} {c}"),
            Some(Op::DeleteChain(c)) => format!("delete chain {t} {c}"),
            Some(Op::AddRule(r)) => format!(
                "add rule {t} {}{}",
                r.chain,
                r.comment
                    .as_ref()
                    .map(|c| format!(" (comment {c:?})"))
                    .unwrap_or_default()
            ),
            Some(Op::DeleteRule { chain, handle }) => {
                format!("delete rule {t} {chain} handle {handle}")
            }
            Some(Op::AddSet(s)) => format!(
                "add {} {t} {}",
                if s.data.is_some() { "map" } else { "set" },
                s.name
            ),
            Some(Op::FlushSet(s)) => format!("flush set {t} {s}"),
            Some(Op::DeleteSet(s)) => format!("delete set {t} {s}"),
            Some(Op::AddElements { set, elements }) => {
                format!("add element {t} {} {}", set.name, elements_text(elements))
            }
            Some(Op::DeleteElements { set, elements }) => format!(
                "delete element {t} {} {}",
                set.name,
                elements_text(elements)
            ),
            None => format!("batch on table {t}"),
        }
    }
}

/// `{ 10.96.0.1 . tcp . 80 : goto c, … }` for error messages: the first
/// three elements and how many more.
fn elements_text(elements: &[Element]) -> String {
    let shown: Vec<String> = elements
        .iter()
        .take(3)
        .map(|e| match &e.data {
            Some(crate::ElementData::Verdict(v)) => format!("{} : {v}", concat_text(&e.key)),
            Some(crate::ElementData::Values(v)) => {
                format!("{} : {}", concat_text(&e.key), concat_text(v))
            }
            None => concat_text(&e.key),
        })
        .collect();
    let more = if elements.len() > 3 {
        format!(", … ({} elements)", elements.len())
    } else {
        String::new()
    };
    format!("{{ {}{more} }}", shown.join(", "))
}

/// Splits an element list into parts whose encoding fits one nested
/// attribute.
fn split_elements(elements: &[Element]) -> Vec<&[Element]> {
    let mut parts = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, e) in elements.iter().enumerate() {
        let len = element_size(e);
        if size + len > MAX_NESTED && i > start {
            parts.push(&elements[start..i]);
            (start, size) = (i, 0);
        }
        size += len;
    }
    parts.push(&elements[start..]);
    parts
}

/// An upper bound of an element's encoded size.
fn element_size(e: &Element) -> usize {
    let key = e.key.len() * 20 + 16;
    let data = match &e.data {
        Some(crate::ElementData::Verdict(crate::Verdict::Jump(c) | crate::Verdict::Goto(c))) => {
            c.len() + 32
        }
        Some(crate::ElementData::Values(v)) => v.len() * 20 + 16,
        _ => 24,
    };
    key * 2 + data + e.comment().map_or(0, |c| c.len() + 12) + 32
}

/// An encoded transaction: buffers for one `sendmsg`, and which change
/// each message's sequence number belongs to.
#[derive(Debug, Default, Clone)]
pub struct Batch {
    /// The bytes, in buffers of about 1 MiB ending on message boundaries.
    pub chunks: Vec<Vec<u8>>,
    /// Sequence number of `BATCH_BEGIN`.
    pub begin_seq: u32,
    /// Sequence number of `BATCH_END` (the kernel acknowledges it).
    pub end_seq: u32,
    /// For each message between them, the index of its change.
    pub ops: Vec<usize>,
}

impl Batch {
    /// The change a sequence number belongs to, if it is one of ours.
    pub fn op_of(&self, seq: u32) -> Option<usize> {
        let i = seq.checked_sub(self.begin_seq)?.checked_sub(1)?;
        self.ops.get(i as usize).copied()
    }

    /// Total size in bytes.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    /// Whether it carries no bytes (never true for an encoded batch).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

struct BatchBuilder {
    batch: Batch,
    seq: u32,
    buf: Vec<u8>,
}

impl BatchBuilder {
    fn begin(&mut self, generation: Option<u32>) {
        self.batch.begin_seq = self.seq;
        let start = begin_message(
            &mut self.buf,
            NFNL_MSG_BATCH_BEGIN,
            0,
            self.seq,
            0,
            NFNL_SUBSYS_NFTABLES,
        );
        if let Some(genid) = generation {
            AttrWriter::new(&mut self.buf).u32(NFNL_BATCH_GENID, genid);
        }
        end_message(&mut self.buf, start);
        self.seq = self.seq.wrapping_add(1);
    }

    fn message(
        &mut self,
        op: usize,
        msg: u16,
        flags: u16,
        family: u8,
        fill: impl FnOnce(&mut AttrWriter<'_>),
    ) {
        if self.buf.len() > CHUNK - MESSAGE_ROOM {
            self.batch
                .chunks
                .push(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        }
        let start = begin_message(&mut self.buf, nft_type(msg), flags, self.seq, family, 0);
        fill(&mut AttrWriter::new(&mut self.buf));
        end_message(&mut self.buf, start);
        self.batch.ops.push(op);
        self.seq = self.seq.wrapping_add(1);
    }

    fn end(mut self) -> Batch {
        self.batch.end_seq = self.seq;
        let start = begin_message(
            &mut self.buf,
            NFNL_MSG_BATCH_END,
            NLM_F_ACK,
            self.seq,
            0,
            NFNL_SUBSYS_NFTABLES,
        );
        end_message(&mut self.buf, start);
        self.batch.chunks.push(self.buf);
        self.batch
    }
}

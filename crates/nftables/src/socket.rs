//! The transport: a blocking `NETLINK_NETFILTER` socket that sends a
//! [`Transaction`] as one batch in one `sendmsg` (several buffers, one
//! transaction) and reads back our own table.
//!
//! nf_tables state is per network namespace: the socket acts on the
//! namespace of the thread that opens it (so a test opens it on a thread
//! that entered its namespace, and the proxy under `ip netns exec` opens
//! it where it runs), and keeps acting there whichever thread uses it.
//!
//! The kernel processes a batch inside `sendmsg`, so when it returns every
//! reply is queued: errors for refused messages, then the ack of
//! `BATCH_END` (kernels from 6.10 ack it; on older ones the queue simply
//! ends). The socket caps acks to headers (`NETLINK_CAP_ACK`) and has
//! large buffers so that a batch of any size fits and its errors too.

use crate::codec::attrs::{AttrWriter, attrs, be32};
use crate::codec::constants::*;
use crate::codec::message::{self, begin_message, end_message};
use crate::codec::reply::{Reply, parse_replies};
use crate::{Chain, Element, Error, Family, Refusal, Rule, Set, Table, Transaction};
use netlink_sys::protocols::NETLINK_NETFILTER;
use netlink_sys::{Socket, SocketAddr};
use nix::sys::socket::{MsgFlags, NetlinkAddr, setsockopt, sockopt};
use std::collections::BTreeMap;
use std::io::{self, IoSlice};
use std::os::fd::AsRawFd;

/// Receive buffer size; replies of a dump come in messages of up to 16 KiB.
const RECV_BUF: usize = 1 << 20;
/// Socket receive buffer (queued errors of a large refused batch).
const RCVBUF: usize = 16 << 20;

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
    /// Each set's elements, by set name.
    pub elements: BTreeMap<String, Vec<Element>>,
}

/// An nf_tables netlink socket.
#[derive(Debug)]
pub struct NftSocket {
    sock: Socket,
    seq: u32,
    recv: Vec<u8>,
}

impl NftSocket {
    /// Opens a socket in the calling thread's network namespace.
    pub fn connect() -> Result<Self, Error> {
        let mut sock = Socket::new(NETLINK_NETFILTER).map_err(Error::Socket)?;
        sock.bind_auto().map_err(Error::Socket)?;
        sock.connect(&SocketAddr::new(0, 0)).map_err(Error::Socket)?;
        sock.set_cap_ack(true).map_err(Error::Socket)?;
        sock.set_ext_ack(true).map_err(Error::Socket)?;
        // Raising past rmem_max needs CAP_NET_ADMIN, which changing
        // nf_tables needs anyway; without it the default stays.
        let _ = setsockopt(&sock, sockopt::RcvBufForce, &RCVBUF);
        let seq = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_secs() as u32);
        Ok(Self { sock, seq, recv: vec![0; RECV_BUF] })
    }

    /// Applies `tx` as one atomic batch. On [`Error::Refused`] nothing of
    /// it was applied, and each refusal names the change it belongs to.
    pub fn apply(&mut self, tx: &Transaction) -> Result<(), Error> {
        let batch = tx.encode(self.next_seq(tx.ops.len() as u32 + 2));
        let operation = || format!("nf_tables transaction on table {} {}", tx.family.name(), tx.table);
        let _ = setsockopt(&self.sock, sockopt::SndBufForce, &(batch.len() + 4096));
        let iov: Vec<IoSlice<'_>> = batch.chunks.iter().map(|c| IoSlice::new(c)).collect();
        nix::sys::socket::sendmsg::<NetlinkAddr>(self.sock.as_raw_fd(), &iov, &[], MsgFlags::empty(), None)
            .map_err(|e| Error::Send { operation: operation(), source: e.into() })?;
        let mut refusals = Vec::new();
        'read: loop {
            let n = match self.sock.recv(&mut &mut self.recv[..], libc_dontwait()) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(source) => return Err(Error::Receive { operation: operation(), source }),
            };
            let replies = parse_replies(&self.recv[..n]).map_err(|e| decode_error(&operation(), e))?;
            for reply in replies {
                let Reply::Ack { seq, code, detail } = reply else { continue };
                if code == 0 && seq == batch.end_seq {
                    break 'read;
                }
                if code != 0 {
                    let object = batch.op_of(seq).map_or_else(|| tx.describe(usize::MAX), |i| tx.describe(i));
                    refusals.push(Refusal { object, source: io::Error::from_raw_os_error(-code), detail });
                }
            }
        }
        if refusals.is_empty() { Ok(()) } else { Err(Error::Refused(refusals)) }
    }

    /// The ruleset generation (changes with every committed transaction).
    pub fn generation(&mut self) -> Result<u32, Error> {
        let op = "get nf_tables generation";
        let mut found = None;
        self.request(NFT_MSG_GETGEN, 0, 0, op, |_| {}, |msg, _, attrs_| {
            if msg == NFT_MSG_NEWGEN {
                for a in attrs(attrs_) {
                    let (k, v) = a?;
                    if k == NFTA_GEN_ID {
                        found = Some(be32(v)?);
                    }
                }
            }
            Ok(())
        })?;
        found.ok_or_else(|| Error::Decode { operation: op.into(), reason: "no generation id".into() })
    }

    /// Reads back table `family name` and everything in it, asking the
    /// kernel only about this table; `None` if it does not exist.
    pub fn list_table(&mut self, family: Family, name: &str) -> Result<Option<TableContents>, Error> {
        let Some(table) = self.get_table(family, name)? else { return Ok(None) };
        let chains = self.dump(NFT_MSG_GETCHAIN, family, name, NFTA_CHAIN_TABLE, "list chains", |p| message::parse_chain(p))?;
        let sets = self.dump(NFT_MSG_GETSET, family, name, NFTA_SET_TABLE, "list sets", |p| message::parse_set(p))?;
        let rules = self.dump(NFT_MSG_GETRULE, family, name, NFTA_RULE_TABLE, "list rules", |p| message::parse_rule(p))?;
        let mut elements = BTreeMap::new();
        for set in &sets {
            elements.insert(set.name.clone(), self.list_elements(family, name, set)?);
        }
        Ok(Some(TableContents { table, chains, rules, sets, elements }))
    }

    /// The elements of one set of table `family table`.
    pub fn list_elements(&mut self, family: Family, table: &str, set: &Set) -> Result<Vec<Element>, Error> {
        let op = format!("list elements of set {} {table} {}", family.name(), set.name);
        let mut out = Vec::new();
        let fill = |w: &mut AttrWriter<'_>| {
            w.str(NFTA_SET_ELEM_LIST_TABLE, table);
            w.str(NFTA_SET_ELEM_LIST_SET, &set.name);
        };
        self.request(NFT_MSG_GETSETELEM, NLM_F_DUMP, family.nfproto(), &op, fill, |msg, _, payload| {
            if msg == NFT_MSG_NEWSETELEM {
                out.extend(message::parse_elements(set, payload)?);
            }
            Ok(())
        })?;
        Ok(out)
    }

    fn get_table(&mut self, family: Family, name: &str) -> Result<Option<Table>, Error> {
        let op = format!("get table {} {name}", family.name());
        let mut found = None;
        let result = self.request(NFT_MSG_GETTABLE, NLM_F_ACK, family.nfproto(), &op, |w| w.str(NFTA_TABLE_NAME, name), |msg, fam, p| {
            if msg == NFT_MSG_NEWTABLE {
                found = Some(message::parse_table(fam, p)?);
            }
            Ok(())
        });
        match result {
            Err(Error::Kernel { source, .. }) if source.raw_os_error() == Some(2) => Ok(None),
            Err(e) => Err(e),
            Ok(()) => Ok(found),
        }
    }

    /// Dumps one kind of object with a table filter; keeps only objects of
    /// that table (older kernels ignore the filter for some kinds).
    fn dump<T>(
        &mut self,
        msg: u16,
        family: Family,
        table: &str,
        table_attr: u16,
        what: &str,
        parse: impl Fn(&[u8]) -> Result<(String, T), netlink_packet_core::DecodeError>,
    ) -> Result<Vec<T>, Error> {
        let op = format!("{what} of table {} {table}", family.name());
        let mut out = Vec::new();
        self.request(msg, NLM_F_DUMP, family.nfproto(), &op, |w| w.str(table_attr, table), |reply, fam, payload| {
            if reply == msg - 1 && fam == family.nfproto() {
                let (t, obj) = parse(payload)?;
                if t == table {
                    out.push(obj);
                }
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Sends one request and hands every object of the reply to `each`
    /// until the dump ends or the request is acknowledged.
    fn request(
        &mut self,
        msg: u16,
        flags: u16,
        family: u8,
        operation: &str,
        fill: impl FnOnce(&mut AttrWriter<'_>),
        mut each: impl FnMut(u16, u8, &[u8]) -> Result<(), netlink_packet_core::DecodeError>,
    ) -> Result<(), Error> {
        let seq = self.next_seq(1);
        let mut buf = Vec::with_capacity(256);
        let start = begin_message(&mut buf, msg, flags | NLM_F_ACK, seq, family, 0);
        fill(&mut AttrWriter::new(&mut buf));
        end_message(&mut buf, start);
        self.sock.send(&buf, 0).map_err(|source| Error::Send { operation: operation.into(), source })?;
        loop {
            let n = self.sock.recv(&mut &mut self.recv[..], 0).map_err(|source| Error::Receive { operation: operation.into(), source })?;
            for reply in parse_replies(&self.recv[..n]).map_err(|e| decode_error(operation, e))? {
                match reply {
                    Reply::Object { msg, family, attrs } => each(msg, family, attrs).map_err(|e| decode_error(operation, e))?,
                    Reply::Done => return Ok(()),
                    Reply::Ack { seq: s, code: 0, .. } if s == seq => return Ok(()),
                    Reply::Ack { seq: s, code, .. } if s == seq => {
                        return Err(Error::Kernel { operation: operation.into(), source: io::Error::from_raw_os_error(-code) });
                    }
                    Reply::Ack { .. } => {}
                }
            }
        }
    }

    fn next_seq(&mut self, count: u32) -> u32 {
        let seq = self.seq;
        self.seq = self.seq.wrapping_add(count);
        seq
    }
}

fn libc_dontwait() -> i32 {
    MsgFlags::MSG_DONTWAIT.bits()
}

fn decode_error(operation: &str, e: netlink_packet_core::DecodeError) -> Error {
    Error::Decode { operation: operation.to_string(), reason: e.to_string() }
}

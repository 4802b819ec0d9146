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
//!
//! Blocking: from async code, call it inside `spawn_blocking` (the kernel
//! spends its transaction time inside `sendmsg`).

use crate::apply::listed::{ListedTable, Listing};
use crate::codec::attrs::{AttrWriter, attrs, be32, be64};
use crate::codec::constants::*;
use crate::codec::message;
use crate::codec::message::{begin_message, end_message, nft_type};
use crate::codec::reply::{Reply, parse_replies};
use crate::listing::{TableContents, TableReader, names_table};
use crate::{Batch, Error, Family, Refusal, Transaction};
use netlink_packet_core::DecodeError;
use netlink_sys::protocols::NETLINK_NETFILTER;
use netlink_sys::{Socket, SocketAddr};
use nix::sys::socket::{MsgFlags, NetlinkAddr, setsockopt, sockopt};
use std::io::{self, IoSlice};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Receive buffer size; replies of a dump come in messages of up to 16 KiB.
const RECV_BUF: usize = 1 << 20;
/// Socket receive buffer (queued errors of a large refused batch).
const RCVBUF: usize = 16 << 20;
/// `ENOENT`: no such table.
const ENOENT: i32 = 2;

/// What a full sync knows of our table without listing its sets (see
/// [`NftSocket::list_table_reduced`]).
pub(crate) struct KnownSets<'a> {
    /// The table's handle when we wrote into it last.
    pub(crate) handle: u64,
    /// The identities of the `__kp<n>` sets we wrote into it, by `n`.
    pub(crate) sets: std::collections::HashMap<u64, crate::apply::digest::Digest>,
    /// The named sets we want.
    pub(crate) named: &'a [String],
}

/// One reduced listing's outcome.
enum Reduced {
    Absent,
    Listed(Box<ListedTable>),
    /// Listed with known sets, but the table holds others: list it whole.
    Incomplete,
}

/// An nf_tables netlink socket.
#[derive(Debug)]
pub struct NftSocket {
    sock: Socket,
    seq: u32,
    recv: Vec<u8>,
    capture: Option<Vec<Vec<u8>>>,
    kernel_time: Duration,
    /// Time inside `send` and `recv` of requests and dumps since taken.
    request_time: Duration,
}

/// What identifies one incarnation of a table, cheaply (one request):
/// its handle changes when it is deleted and made again, its use count
/// when chains or sets are added or deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableIdentity {
    /// `NFTA_TABLE_HANDLE`.
    pub handle: u64,
    /// `NFTA_TABLE_USE`: how many chains, sets (anonymous ones too) and
    /// other objects it holds.
    pub use_count: u32,
}

impl NftSocket {
    /// Opens a socket in the calling thread's network namespace.
    pub fn connect() -> Result<Self, Error> {
        let mut sock = Socket::new(NETLINK_NETFILTER).map_err(Error::Socket)?;
        sock.bind_auto().map_err(Error::Socket)?;
        sock.connect(&SocketAddr::new(0, 0))
            .map_err(Error::Socket)?;
        sock.set_cap_ack(true).map_err(Error::Socket)?;
        sock.set_ext_ack(true).map_err(Error::Socket)?;
        // Raising past rmem_max needs CAP_NET_ADMIN, which changing
        // nf_tables needs anyway; without it the default stays.
        let _ = setsockopt(&sock, sockopt::RcvBufForce, &RCVBUF);
        let seq = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs() as u32);
        Ok(Self {
            sock,
            seq,
            recv: vec![0; RECV_BUF],
            capture: None,
            kernel_time: Duration::ZERO,
            request_time: Duration::ZERO,
        })
    }

    /// Applies `tx` as one atomic batch. On [`Error::Refused`] nothing of
    /// it was applied, and each refusal names the change it belongs to.
    pub fn apply(&mut self, tx: &Transaction) -> Result<(), Error> {
        let batch = tx.encode(self.next_seq(tx.ops.len() as u32 + 2));
        self.apply_encoded(tx, &batch)
    }

    /// [`NftSocket::apply`] of `tx` encoded already, with sequence numbers
    /// from [`NftSocket::reserve_seq`].
    pub(crate) fn apply_encoded(&mut self, tx: &Transaction, batch: &Batch) -> Result<(), Error> {
        let operation = || {
            format!(
                "nf_tables transaction on table {} {}",
                tx.family.name(),
                tx.table
            )
        };
        self.drain();
        let start = Instant::now();
        self.kernel_time = Duration::ZERO;
        self.send_batch(batch).map_err(|source| Error::Send {
            operation: operation(),
            source,
        })?;
        let refusals = self.read_refusals(tx, batch, &operation);
        self.kernel_time = start.elapsed();
        let refusals = refusals?;
        if refusals.is_empty() {
            Ok(())
        } else {
            Err(Error::Refused(refusals))
        }
    }

    /// How long the last [`NftSocket::apply`] spent in the kernel: from
    /// `sendmsg` of the encoded batch to its last reply read (the kernel
    /// runs the whole transaction inside `sendmsg`). Encoding is not in it.
    pub fn last_kernel_time(&self) -> Duration {
        self.kernel_time
    }

    /// Handle and use count of table `family name` (one small request, no
    /// dump); `None` if it does not exist.
    pub fn table_identity(
        &mut self,
        family: Family,
        name: &str,
    ) -> Result<Option<TableIdentity>, Error> {
        let op = format!("get table {} {name}", family.name());
        let (mut handle, mut use_count) = (None, 0);
        let got = self.request(
            NFT_MSG_GETTABLE,
            0,
            family.nfproto(),
            &op,
            |w| w.str(NFTA_TABLE_NAME, name),
            |msg, _, payload| {
                if msg == NFT_MSG_NEWTABLE {
                    for a in attrs(payload) {
                        let (k, v) = a?;
                        match k {
                            NFTA_TABLE_HANDLE => handle = Some(be64(v)?),
                            NFTA_TABLE_USE => use_count = be32(v)?,
                            _ => {}
                        }
                    }
                }
                Ok(())
            },
        );
        if !found(got)? {
            return Ok(None);
        }
        handle
            .map(|handle| Some(TableIdentity { handle, use_count }))
            .ok_or_else(|| Error::Decode {
                operation: op,
                reason: "no table handle".into(),
            })
    }

    /// Sends every buffer of `batch` in one `sendmsg`: one transaction.
    fn send_batch(&mut self, batch: &Batch) -> io::Result<()> {
        let _ = setsockopt(&self.sock, sockopt::SndBufForce, &(batch.len() + 4096));
        let iov: Vec<IoSlice<'_>> = batch.chunks.iter().map(|c| IoSlice::new(c)).collect();
        nix::sys::socket::sendmsg::<NetlinkAddr>(
            self.sock.as_raw_fd(),
            &iov,
            &[],
            MsgFlags::empty(),
            None,
        )?;
        Ok(())
    }

    /// Reads the batch's replies (all queued once `sendmsg` returned) up to
    /// the ack of `BATCH_END`: the errors, each named by its change.
    fn read_refusals(
        &mut self,
        tx: &Transaction,
        batch: &Batch,
        operation: &dyn Fn() -> String,
    ) -> Result<Vec<Refusal>, Error> {
        let mut refusals = Vec::new();
        loop {
            let n = match self
                .sock
                .recv(&mut &mut self.recv[..], MsgFlags::MSG_DONTWAIT.bits())
            {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(refusals),
                Err(source) => {
                    return Err(Error::Receive {
                        operation: operation(),
                        source,
                    });
                }
            };
            for reply in
                parse_replies(&self.recv[..n]).map_err(|e| decode_error(&operation(), e))?
            {
                let Reply::Ack { seq, code, detail } = reply else {
                    continue;
                };
                if !(batch.begin_seq..=batch.end_seq).contains(&seq) {
                    continue;
                }
                if code == 0 && seq == batch.end_seq {
                    return Ok(refusals);
                }
                if code != 0 {
                    let object = tx.describe(batch.op_of(seq).unwrap_or(usize::MAX));
                    refusals.push(Refusal {
                        object,
                        source: io::Error::from_raw_os_error(-code),
                        detail,
                    });
                }
            }
        }
    }

    /// Discards replies left over from an interrupted request.
    fn drain(&mut self) {
        while matches!(self.sock.recv(&mut &mut self.recv[..], MsgFlags::MSG_DONTWAIT.bits()), Ok(n) if n > 0)
        {
        }
    }

    /// The ruleset generation (changes with every committed transaction).
    pub fn generation(&mut self) -> Result<u32, Error> {
        let op = "get nf_tables generation";
        let mut found = None;
        self.request(
            NFT_MSG_GETGEN,
            0,
            0,
            op,
            |_| {},
            |msg, _, attrs_| {
                if msg == NFT_MSG_NEWGEN {
                    for a in attrs(attrs_) {
                        let (k, v) = a?;
                        if k == NFTA_GEN_ID {
                            found = Some(be32(v)?);
                        }
                    }
                }
                Ok(())
            },
        )?;
        found.ok_or_else(|| Error::Decode {
            operation: op.into(),
            reason: "no generation id".into(),
        })
    }

    /// Starts keeping every buffer read for listings (tests and
    /// debugging: what the kernel sent, for [`TableContents::decode`]).
    pub fn capture(&mut self) {
        self.capture = Some(Vec::new());
    }

    /// The buffers kept since [`NftSocket::capture`], which stops.
    pub fn take_capture(&mut self) -> Vec<Vec<u8>> {
        self.capture.take().unwrap_or_default()
    }

    /// Reads back table `family name` and everything in it, asking the
    /// kernel only about this table; `None` if it does not exist.
    pub fn list_table(
        &mut self,
        family: Family,
        name: &str,
    ) -> Result<Option<TableContents>, Error> {
        self.list_table_except(family, name, |_| false)
    }

    /// [`NftSocket::list_table`], without asking for the elements of the
    /// sets `known` picks (their lists stay empty): each element dump makes
    /// the kernel look its set up by name among all the table's sets, so
    /// dumping thousands of anonymous sets costs O(n²). A caller that wrote
    /// a bound anonymous set knows its elements (they cannot change).
    pub fn list_table_except(
        &mut self,
        family: Family,
        name: &str,
        known: impl Fn(&crate::Set) -> bool,
    ) -> Result<Option<TableContents>, Error> {
        let mut reader = TableReader::new(family, name);
        let nfproto = family.nfproto();
        let table_op = format!("get table {} {name}", family.name());
        let got = self.request(
            NFT_MSG_GETTABLE,
            0,
            nfproto,
            &table_op,
            |w| w.str(NFTA_TABLE_NAME, name),
            |m, f, p| reader.feed(m, f, p),
        );
        if !found(got)? {
            return Ok(None);
        }
        for (msg, what) in [
            (NFT_MSG_GETCHAIN, "chains"),
            (NFT_MSG_GETSET, "sets"),
            (NFT_MSG_GETRULE, "rules"),
        ] {
            self.dump_table(family, name, msg, what, |m, f, p| reader.feed(m, f, p))?;
        }
        let sets: Vec<String> = reader
            .sets()
            .iter()
            .filter(|s| !known(s))
            .map(|s| s.name.clone())
            .collect();
        for set in sets {
            let op = format!("list elements of set {} {name} {set}", family.name());
            let fill = |w: &mut AttrWriter<'_>| {
                w.str(NFTA_SET_ELEM_LIST_TABLE, name);
                w.str(NFTA_SET_ELEM_LIST_SET, &set);
            };
            self.request(
                NFT_MSG_GETSETELEM,
                NLM_F_DUMP,
                nfproto,
                &op,
                fill,
                |m, f, p| reader.feed(m, f, p),
            )?;
        }
        Ok(reader.finish())
    }

    /// The time spent inside the `send` and `recv` calls of requests and
    /// dumps (listings, generation and table checks) since the last call:
    /// the kernel's share of a read-back (it builds each dump message
    /// while we wait in `recv`) and the copies.
    pub fn take_request_time(&mut self) -> Duration {
        std::mem::take(&mut self.request_time)
    }

    /// Our table reduced as a full sync compares it (`apply/listed.rs`):
    /// table, chains and sets listed; the elements of anonymous sets
    /// dumped only where no fingerprint of ours stands for them, those of
    /// named sets (but the packet path's) and the rules folded into
    /// digests as they are read, never held. `None` if it does not exist.
    ///
    /// With `known` (the table's handle when we last wrote it, the
    /// identities of the `__kp<n>` sets we wrote into it, and the named
    /// sets we want), the table's sets are not dumped — each resumed set
    /// dump makes the kernel walk the table's sets from the first, O(n²)
    /// in the anonymous sets — but the named ones asked for by name; if
    /// the table is another, a rule binds a set we did not write, or the
    /// table's use count shows sets not seen, it is listed again whole.
    pub(crate) fn list_table_reduced(
        &mut self,
        family: Family,
        name: &str,
        known: Option<KnownSets<'_>>,
    ) -> Result<Option<ListedTable>, Error> {
        if let Some(known) = known {
            match self.list_reduced(family, name, Some(known))? {
                Reduced::Incomplete => {}
                Reduced::Absent => return Ok(None),
                Reduced::Listed(t) => return Ok(Some(*t)),
            }
        }
        match self.list_reduced(family, name, None)? {
            Reduced::Listed(t) => Ok(Some(*t)),
            _ => Ok(None),
        }
    }

    fn list_reduced(
        &mut self,
        family: Family,
        name: &str,
        known: Option<KnownSets<'_>>,
    ) -> Result<Reduced, Error> {
        let nfproto = family.nfproto();
        let ours = |m: u16, want: u16, f: u8, p: &[u8]| -> Result<bool, DecodeError> {
            Ok(m == want && f == nfproto && names_table(p, name)?)
        };
        let (mut table, mut handle, mut table_use) = (None, 0, 0);
        let table_op = format!("get table {} {name}", family.name());
        let got = self.request(
            NFT_MSG_GETTABLE,
            0,
            nfproto,
            &table_op,
            |w| w.str(NFTA_TABLE_NAME, name),
            |m, f, p| {
                if ours(m, NFT_MSG_NEWTABLE, f, p)? {
                    table = Some(message::parse_table(f, p)?);
                    for a in attrs(p) {
                        let (k, v) = a?;
                        match k {
                            NFTA_TABLE_HANDLE => handle = be64(v)?,
                            NFTA_TABLE_USE => table_use = be32(v)?,
                            _ => {}
                        }
                    }
                }
                Ok(())
            },
        );
        if !found(got)? {
            return Ok(Reduced::Absent);
        }
        let Some(table) = table else {
            return Ok(Reduced::Absent);
        };
        let mut listing = Listing::new(table);
        let known = match known {
            Some(k) if k.handle == handle => Some(k),
            Some(k) => {
                tracing::debug!(
                    handle,
                    known = k.handle,
                    "our table was made again: listing it whole"
                );
                return Ok(Reduced::Incomplete);
            }
            None => None,
        };
        self.dump_table(family, name, NFT_MSG_GETCHAIN, "chains", |m, f, p| {
            if ours(m, NFT_MSG_NEWCHAIN, f, p)? {
                listing.chain(message::parse_chain(p)?.1);
            }
            Ok(())
        })?;
        match known {
            Some(KnownSets { sets, named, .. }) => {
                listing = listing.with_known(sets);
                for set in named {
                    let op = format!("get set {} {name} {set}", family.name());
                    let fill = |w: &mut AttrWriter<'_>| {
                        w.str(NFTA_SET_TABLE, name);
                        w.str(NFTA_SET_NAME, set);
                    };
                    let got = self.request(NFT_MSG_GETSET, 0, nfproto, &op, fill, |m, f, p| {
                        if ours(m, NFT_MSG_NEWSET, f, p)? {
                            listing.set(message::parse_set(p)?.1);
                        }
                        Ok(())
                    });
                    found(got)?;
                }
            }
            None => {
                self.dump_table(family, name, NFT_MSG_GETSET, "sets", |m, f, p| {
                    if ours(m, NFT_MSG_NEWSET, f, p)? {
                        listing.set(message::parse_set(p)?.1);
                    }
                    Ok(())
                })?;
            }
        }
        for set in listing.unprinted().to_vec() {
            let elements = self.set_elements(family, name, &set)?;
            listing.anonymous_elements(&set, elements);
        }
        let compared: Vec<crate::Set> = listing.compared_sets().cloned().collect();
        for set in &compared {
            self.each_elements(family, name, set, |elements| {
                listing.named_elements(&set.name, &elements)
            })?;
        }
        self.dump_table(family, name, NFT_MSG_GETRULE, "rules", |m, f, p| {
            if ours(m, NFT_MSG_NEWRULE, f, p)? {
                listing.rule(message::parse_rule(p)?.1);
            }
            Ok(())
        })?;
        let fast = listing.is_known();
        if fast && !listing.complete(table_use) {
            tracing::debug!(table_use, seen = %listing.counts(), "our table holds sets not known: listing it whole");
            return Ok(Reduced::Incomplete);
        }
        Ok(Reduced::Listed(Box::new(listing.finish(handle))))
    }

    /// The elements of set `set` of table `family table`, as listed.
    pub(crate) fn set_elements(
        &mut self,
        family: Family,
        table: &str,
        set: &crate::Set,
    ) -> Result<Vec<crate::Element>, Error> {
        let mut out = Vec::new();
        self.each_elements(family, table, set, |mut elements| out.append(&mut elements))?;
        Ok(out)
    }

    /// Dumps the elements of set `set` of table `family table`, handing
    /// them to `each` message by message.
    fn each_elements(
        &mut self,
        family: Family,
        table: &str,
        set: &crate::Set,
        mut each: impl FnMut(Vec<crate::Element>),
    ) -> Result<(), Error> {
        let nfproto = family.nfproto();
        let op = format!(
            "list elements of set {} {table} {}",
            family.name(),
            set.name
        );
        let fill = |w: &mut AttrWriter<'_>| {
            w.str(NFTA_SET_ELEM_LIST_TABLE, table);
            w.str(NFTA_SET_ELEM_LIST_SET, &set.name);
        };
        self.request(
            NFT_MSG_GETSETELEM,
            NLM_F_DUMP,
            nfproto,
            &op,
            fill,
            |m, f, p| {
                if m == NFT_MSG_NEWSETELEM && f == nfproto && names_table(p, table)? {
                    each(message::parse_elements(set, p)?);
                }
                Ok(())
            },
        )
    }

    /// Dumps the `what` (chains, sets or rules: `msg`) of table `family
    /// name`, handing every object of the reply to `each`.
    fn dump_table(
        &mut self,
        family: Family,
        name: &str,
        msg: u16,
        what: &str,
        each: impl FnMut(u16, u8, &[u8]) -> Result<(), DecodeError>,
    ) -> Result<(), Error> {
        let op = format!("list {what} of table {} {name}", family.name());
        self.request(
            msg,
            NLM_F_DUMP,
            family.nfproto(),
            &op,
            |w| w.str(1, name),
            each,
        )
    }

    /// Sends one request and hands every object of the reply to `each`
    /// until the dump ends or the request is acknowledged. Replies to
    /// other (earlier, interrupted) requests are skipped.
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
        let start = begin_message(&mut buf, nft_type(msg), flags | NLM_F_ACK, seq, family, 0);
        fill(&mut AttrWriter::new(&mut buf));
        end_message(&mut buf, start);
        self.drain();
        let sent = Instant::now();
        let result = self.sock.send(&buf, 0);
        self.request_time += sent.elapsed();
        result.map_err(|source| Error::Send {
            operation: operation.into(),
            source,
        })?;
        loop {
            let waited = Instant::now();
            let n = self.sock.recv(&mut &mut self.recv[..], 0);
            self.request_time += waited.elapsed();
            let n = n.map_err(|source| Error::Receive {
                operation: operation.into(),
                source,
            })?;
            if let Some(capture) = &mut self.capture {
                capture.push(self.recv[..n].to_vec());
            }
            for reply in parse_replies(&self.recv[..n]).map_err(|e| decode_error(operation, e))? {
                match reply {
                    Reply::Object {
                        seq: s,
                        msg,
                        family,
                        attrs,
                    } if s == seq => {
                        each(msg, family, attrs).map_err(|e| decode_error(operation, e))?
                    }
                    Reply::Done { seq: s } if s == seq => return Ok(()),
                    Reply::Ack {
                        seq: s, code: 0, ..
                    } if s == seq => return Ok(()),
                    Reply::Ack { seq: s, code, .. } if s == seq => {
                        return Err(Error::Kernel {
                            operation: operation.into(),
                            source: io::Error::from_raw_os_error(-code),
                        });
                    }
                    _ => {}
                }
            }
        }
    }

    /// Gives the sequence numbers from the next on to `encode` (which
    /// returns how many it used), for transactions encoded away from the
    /// socket and applied with [`NftSocket::apply_encoded`].
    pub(crate) fn reserve_seq(&mut self) -> SeqReservation {
        SeqReservation { next: self.seq }
    }

    /// Ends `reservation`: the socket's next sequence number follows it.
    pub(crate) fn end_reservation(&mut self, reservation: SeqReservation) {
        self.seq = reservation.next;
    }

    fn next_seq(&mut self, count: u32) -> u32 {
        let seq = self.seq;
        self.seq = self.seq.wrapping_add(count);
        seq
    }
}

/// Sequence numbers taken by transactions encoded away from the socket.
pub(crate) struct SeqReservation {
    next: u32,
}

impl SeqReservation {
    /// `tx` encoded with the next sequence numbers.
    pub(crate) fn encode(&mut self, tx: &Transaction) -> Batch {
        let batch = tx.encode(self.next);
        self.next = self.next.wrapping_add(tx.ops.len() as u32 + 2);
        batch
    }
}

/// Whether a request found its object: `false` for the kernel's ENOENT.
fn found(result: Result<(), Error>) -> Result<bool, Error> {
    match result {
        Ok(()) => Ok(true),
        Err(Error::Kernel { source, .. }) if source.raw_os_error() == Some(ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

fn decode_error(operation: &str, e: netlink_packet_core::DecodeError) -> Error {
    Error::Decode {
        operation: operation.to_string(),
        reason: e.to_string(),
    }
}

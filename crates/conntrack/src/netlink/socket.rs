//! The transport: a blocking `NETLINK_NETFILTER` socket that dumps the
//! conntrack table and deletes entries in batches.

use super::codec::{self, Reply};
use crate::Error;
use crate::flow::Flow;
use netlink_sys::protocols::NETLINK_NETFILTER;
use netlink_sys::{Socket, SocketAddr};
use nix::sys::socket::{setsockopt, sockopt};
use std::io;

/// Receive buffer: a dump comes in datagrams of up to 32 KiB.
const RECV_BUF: usize = 1 << 16;
/// Socket receive buffer asked for, so that the acks of a whole batch fit
/// (the kernel answers every message of a `sendmsg` before it returns).
const RCVBUF: usize = 8 << 20;
/// Deletes per `sendmsg` when the large receive buffer was granted.
const BATCH: usize = 1024;
/// Deletes per `sendmsg` with the default receive buffer.
const SMALL_BATCH: usize = 128;
const ENOENT: i32 = 2;

/// A ctnetlink socket in the network namespace of the thread that opened it.
#[derive(Debug)]
pub struct ConntrackSocket {
    sock: Socket,
    seq: u32,
    batch: usize,
    recv: Vec<u8>,
}

/// What a batch of deletes did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOutcome {
    /// The entries the kernel deleted.
    pub deleted: Vec<Flow>,
    /// The entries that were already gone (`ENOENT`).
    pub gone: usize,
}

impl ConntrackSocket {
    /// Opens a socket in the calling thread's network namespace.
    pub fn connect() -> Result<Self, Error> {
        let mut sock = Socket::new(NETLINK_NETFILTER).map_err(Error::Socket)?;
        sock.bind_auto().map_err(Error::Socket)?;
        sock.connect(&SocketAddr::new(0, 0)).map_err(Error::Socket)?;
        sock.set_cap_ack(true).map_err(Error::Socket)?;
        let batch = if force_rcvbuf(&sock) { BATCH } else { SMALL_BATCH };
        Ok(Self { sock, seq: initial_seq(), batch, recv: vec![0; RECV_BUF] })
    }

    /// How many deletes go in one `sendmsg`: 1,024 when the socket could
    /// get a receive buffer for all their acks, else 128.
    pub fn batch_size(&self) -> usize {
        self.batch
    }

    /// Every conntrack entry of `family` (`AF_INET`, `AF_INET6`, or 0 for
    /// both), in one dump.
    pub fn dump(&mut self, family: u8) -> Result<Vec<Flow>, Error> {
        let seq = self.next_seq();
        self.send(&codec::dump_request(family, seq), "dump conntrack table")?;
        let mut flows = Vec::new();
        loop {
            for reply in self.receive("dump conntrack table")? {
                match reply {
                    Reply::Flow(flow) => flows.push(flow),
                    Reply::Done => return Ok(flows),
                    Reply::Ack { errno: 0, .. } | Reply::Other => {}
                    Reply::Ack { errno, .. } => return Err(kernel("dump conntrack table", errno)),
                }
            }
        }
    }

    /// Deletes each of `flows` by its original tuple, many per `sendmsg`;
    /// entries already gone are counted apart, not errors.
    pub fn delete(&mut self, flows: &[Flow]) -> Result<DeleteOutcome, Error> {
        let mut outcome = DeleteOutcome::default();
        for chunk in flows.chunks(self.batch) {
            self.delete_batch(chunk, &mut outcome)?;
        }
        Ok(outcome)
    }

    fn delete_batch(&mut self, flows: &[Flow], outcome: &mut DeleteOutcome) -> Result<(), Error> {
        let first = self.seq.wrapping_add(1);
        let mut buf = Vec::with_capacity(flows.len() * 80);
        for flow in flows {
            let seq = self.next_seq();
            codec::push_delete(&mut buf, flow, seq);
        }
        self.send(&buf, "delete conntrack entries")?;
        let mut pending = flows.len();
        while pending > 0 {
            for reply in self.receive("delete conntrack entries")? {
                let Reply::Ack { seq, errno } = reply else { continue };
                let Some(flow) = flows.get(seq.wrapping_sub(first) as usize) else { continue };
                pending -= 1;
                match errno {
                    0 => outcome.deleted.push(*flow),
                    ENOENT => outcome.gone += 1,
                    errno => return Err(kernel(&format!("delete conntrack entry {flow:?}"), errno)),
                }
            }
        }
        Ok(())
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    fn send(&self, buf: &[u8], operation: &str) -> Result<(), Error> {
        self.sock
            .send(buf, 0)
            .map(drop)
            .map_err(|source| Error::Netlink { operation: operation.to_string(), source })
    }

    fn receive(&mut self, operation: &str) -> Result<Vec<Reply>, Error> {
        let n = self
            .sock
            .recv(&mut &mut self.recv[..], 0)
            .map_err(|source| Error::Netlink { operation: operation.to_string(), source })?;
        let data = self.recv.get(..n).unwrap_or(&self.recv[..]);
        codec::parse_replies(data).map_err(|source| Error::Decode { operation: operation.to_string(), source })
    }
}

fn kernel(operation: &str, errno: i32) -> Error {
    Error::Netlink { operation: operation.to_string(), source: io::Error::from_raw_os_error(errno) }
}

fn initial_seq() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.subsec_nanos())
}

/// `SO_RCVBUFFORCE` (needs `CAP_NET_ADMIN`, as deleting entries does);
/// whether it was granted.
fn force_rcvbuf(sock: &Socket) -> bool {
    setsockopt(sock, sockopt::RcvBufForce, &RCVBUF).is_ok()
}

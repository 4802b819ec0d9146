//! Conntrack over netlink (ctnetlink), as upstream does it: one dump of
//! the table (`IPCTNL_MSG_CT_GET` with `NLM_F_DUMP`) and deletes by
//! original tuple (`IPCTNL_MSG_CT_DELETE`), many in one `sendmsg`, their
//! acks read back. A flow already gone (`ENOENT`) is not an error.
//!
//! The conntrack table is per network namespace: the socket acts on the
//! namespace of the thread that opens it, whichever thread uses it later.
//! The codec is our own, small one (a dump request, a delete request, and
//! the decoding of entries and acks, see [`codec`]) on a `netlink-sys`
//! socket, as the IPVS and nf_tables codecs of this repository are.
//!
//! Blocking: from async code, open it in place and use it inside
//! `spawn_blocking`.

pub mod codec;
mod socket;

pub use socket::{ConntrackSocket, DeleteOutcome};

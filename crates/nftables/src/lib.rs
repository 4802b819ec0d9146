//! nftables mode's foundation: an own nf_tables netlink codec and its
//! transport — no libnftnl, no `nft` process.
//!
//! Pipeline position: under the nftables backend. Its renderer builds a
//! [`Transaction`] (pure) of typed objects — [`Table`], [`Chain`],
//! [`Rule`] made of [`Expr`]essions (see [`stmt`] for the lists `nft`
//! makes for upstream's statements), [`Set`]s and maps with [`Element`]s —
//! and its applier hands it to [`NftSocket::apply`], which sends it as one
//! atomic batch (rules name chains by name, never by id) and names the
//! object the kernel refused. [`NftSocket::list_table`] reads back our own
//! table only, into the same types, for a full sync's diff. [`apply`]
//! turns a desired table into the transaction that gets the kernel there
//! (full syncs by read-back and diff, partial ones against what was last
//! applied). [`render`] is the mode's pure renderer: the shared plan as
//! upstream v1.36's table, as typed objects and as `nft -f` text;
//! [`proxier`] drives both as nftables mode's `proxier::Proxier`.
//!
//! ```no_run
//! use nftables::{Chain, Family, NftSocket, Op, Rule, Table, Transaction, Verdict, stmt};
//!
//! let mut tx = Transaction::new(Family::Ip, "kube-proxy");
//! tx.push(Op::AddTable(Table::new(Family::Ip, "kube-proxy").with_comment("rules for kube-proxy")))
//!     .push(Op::AddChain(Chain::regular("services")))
//!     .push(Op::AddRule(Rule::new("services", stmt::verdict(Verdict::Accept))));
//! let mut socket = NftSocket::connect()?; // in the network namespace of this thread
//! socket.apply(&tx)?; // all or nothing; a refusal names the change
//! let ours = socket.list_table(Family::Ip, "kube-proxy")?; // only our table
//! # Ok::<(), nftables::Error>(())
//! ```
//!
//! The codec is our own, on `netlink-packet-core` / `netlink-sys`, like
//! the IPVS one: `rustables` is GPL-3.0 and cannot be used, and mullvad's
//! `nftnl` needs libnftnl at build and run time (see `README.md`).

pub mod apply;
mod chain;
mod codec;
mod error;
mod expr;
mod listing;
pub mod proxier;
pub mod render;
mod rule;
mod set;
mod socket;
pub mod stmt;
mod table;
mod transaction;
mod value;

pub use chain::{BaseChain, Chain, ChainType, Hook, Policy};
pub use error::{Error, Refusal};
pub use expr::{CmpOp, CtKey, Expr, ImmediateData, MetaDir, MetaKey, NatType, PayloadBase, SetRef};
pub use listing::TableContents;
pub use rule::Rule;
pub use set::{Element, ElementData, Set, SetFlags, TypeOf};
pub use socket::{NftSocket, TableIdentity};
pub use table::Table;
pub use transaction::{Batch, Op, Transaction};
pub use value::{DataType, Family, Register, Value, Verdict};

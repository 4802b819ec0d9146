//! The host layer: the node's facts and the host's knobs, one of each, for
//! every mode's proxier (renderers never reach it).
//!
//! * [`addresses`]: the node's local addresses, read over rtnetlink on
//!   every sync (upstream re-reads them every sync too);
//! * [`sysctl`]: reading and writing `/proc/sys` values;
//! * [`nfacct`]: the nfacct counters upstream's iptables rules name
//!   (created, and read back for the metrics);
//! * [`command`]: the one runner of external tools (`iptables-restore`,
//!   `ipset`, `conntrack`, ...): the command, its arguments, its stdin, and
//!   errors that carry the command line and its stderr.
//!
//! Everything acts in the calling thread's network namespace (tools run as
//! its children, sysctls under /proc/sys/net and netlink sockets are per
//! namespace), so tests run it inside namespaces they create.

pub mod addresses;
pub mod command;
mod error;
pub mod nfacct;
pub mod sysctl;

pub use addresses::{read_local_addresses, read_local_addresses_except};
pub use command::Invocation;
pub use error::Error;

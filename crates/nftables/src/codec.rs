//! The nf_tables netlink codec: typed objects to attributes and back,
//! kept apart from any socket. Attributes are written straight into the
//! batch buffer (one pass, no intermediate tree), read back with
//! `netlink-packet-core`'s attribute iterator.

pub(crate) mod attrs;
pub(crate) mod constants;
pub(crate) mod data;
pub(crate) mod expr;
pub(crate) mod message;
pub(crate) mod reply;
pub(crate) mod userdata;

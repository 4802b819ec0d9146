//! The HTTP/1 plumbing every server here shares: binding like Go's
//! `net.Listen`, serving connections with hyper, and writing responses the
//! way Go's `net/http` does.

mod response;
mod server;

pub(crate) use response::{go_response, not_found};
pub use server::BoundServer;
pub(crate) use server::{Respond, bind_listener};

//! The open-files limit: every forwarded connection holds two sockets (and
//! a pipe per busy direction), so the forwarder raises its soft limit to
//! the hard one, as Go programs (upstream kube-proxy) do at start.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Raises `RLIMIT_NOFILE`'s soft limit to its hard limit (best effort).
pub(crate) fn raise_open_files() {
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else { return };
    if soft < hard {
        match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => tracing::debug!(from = soft, to = hard, "raised the open files limit"),
            Err(err) => tracing::warn!(%err, soft, hard, "cannot raise the open files limit"),
        }
    }
}

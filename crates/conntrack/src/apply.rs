//! The kernel side: list UDP flows and delete stale ones with the
//! `conntrack` tool (conntrack-tools), in the caller's network namespace.

use crate::Error;
use crate::flow::{UdpFlow, parse_flows};
use crate::stale::{Deletion, ServiceTargets, find_stale};
use model::{IpFamily, Snapshot};
use std::net::IpAddr;

/// Lists the UDP flows of `family` and deletes the stale ones for
/// `snapshot` (see [`crate::stale`]); returns the deletions made. Does
/// nothing when there is no UDP service.
pub async fn apply_stale_flow_cleanup(snapshot: &Snapshot, node_ips: &[IpAddr], family: IpFamily) -> Result<Vec<Deletion>, Error> {
    let targets = ServiceTargets::new(snapshot, node_ips);
    if targets.is_empty() {
        return Ok(Vec::new());
    }
    let deletions = find_stale(&list_udp_flows(family).await?, &targets);
    for deletion in &deletions {
        apply_deletion(deletion, family).await?;
    }
    Ok(deletions)
}

/// `conntrack -L -p udp -f ipv4|ipv6`, parsed.
pub async fn list_udp_flows(family: IpFamily) -> Result<Vec<UdpFlow>, Error> {
    let out = conntrack(&["-L", "-p", "udp", "-f", family_arg(family)]).await?;
    Ok(parse_flows(&out))
}

/// Deletes every UDP flow to `dst:dport` answered from `reply_src`; none
/// left to delete (they expired meanwhile) is not an error.
pub async fn apply_deletion(deletion: &Deletion, family: IpFamily) -> Result<(), Error> {
    let (dst, dport, reply_src) = (deletion.dst.to_string(), deletion.dport.to_string(), deletion.reply_src.to_string());
    let args = ["-D", "-p", "udp", "-f", family_arg(family), "--orig-dst", &dst, "--orig-port-dst", &dport, "--reply-src", &reply_src];
    match conntrack(&args).await {
        Err(Error::Failed { stderr, .. }) if stderr.contains("0 flow entries") => Ok(()),
        other => other.map(drop),
    }
}

fn family_arg(family: IpFamily) -> &'static str {
    match family {
        IpFamily::V4 => "ipv4",
        IpFamily::V6 => "ipv6",
    }
}

/// Runs `conntrack args` through the host's tool runner; its stdout, or
/// an error with its stderr.
async fn conntrack(args: &[&str]) -> Result<String, Error> {
    Ok(host::command::output(&host::Invocation::with_args("conntrack", args)).await?)
}

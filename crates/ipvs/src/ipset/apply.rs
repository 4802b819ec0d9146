//! Syncing our ipsets in the kernel with the `ipset` tool: one `ipset save`
//! to read them, one `ipset restore -exist` batch to change them.

use super::{IpSets, KubeSet, render_ipset_restore};
use crate::Error;
use crate::command::run;
use model::IpFamily;

/// Reads the members of our sets of `family` (`ipset save`).
pub async fn read_ipsets(family: IpFamily) -> Result<IpSets, Error> {
    let text = run("ipset", &["save"], None)
        .await
        .map_err(|e| Error::Ipset { operation: "ipset save".into(), detail: e.to_string() })?;
    Ok(IpSets::parse_save(family, &text))
}

/// Makes our sets of `desired.family` hold exactly `desired`'s members,
/// creating missing sets. Returns the number of added and deleted members.
pub async fn sync_ipsets(desired: &IpSets) -> Result<usize, Error> {
    let current = read_ipsets(desired.family).await?;
    let batch = render_ipset_restore(desired, &current);
    let changes = batch.lines().filter(|l| !l.starts_with("create ")).count();
    run("ipset", &["restore", "-exist"], Some(&batch)).await.map_err(|e| Error::Ipset {
        operation: format!("ipset restore -exist ({changes} changes)"),
        detail: e.to_string(),
    })?;
    Ok(changes)
}

/// Destroys our sets of `family` that exist. Call after removing the
/// iptables rules that use them (a referenced set cannot be destroyed).
pub async fn destroy_ipsets(family: IpFamily) -> Result<(), Error> {
    let existing = run("ipset", &["list", "-n"], None)
        .await
        .map_err(|e| Error::Ipset { operation: "ipset list -n".into(), detail: e.to_string() })?;
    for set in KubeSet::ALL {
        let name = set.name(family);
        if existing.lines().any(|l| l.trim() == name) {
            run("ipset", &["destroy", &name], None)
                .await
                .map_err(|e| Error::Ipset { operation: format!("ipset destroy {name}"), detail: e.to_string() })?;
        }
    }
    Ok(())
}

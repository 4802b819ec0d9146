//! Removing our table: `--cleanup`, and start-up in another mode.

use crate::{Error, Family, NftSocket, Op, Transaction};

/// Deletes table `family kube-proxy` if it exists (asking about that
/// table only, never listing others); whether it existed.
pub fn cleanup(socket: &mut NftSocket, family: Family) -> Result<bool, Error> {
    let name = super::KUBE_PROXY_TABLE;
    if socket.table_identity(family, name)?.is_none() {
        return Ok(false);
    }
    let mut tx = Transaction::new(family, name);
    tx.push(Op::DeleteTable);
    socket.apply(&tx)?;
    Ok(true)
}

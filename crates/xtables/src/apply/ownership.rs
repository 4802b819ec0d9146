//! Which chains and built-in-chain jumps are ours to change or delete.
//!
//! Ours: the per-service chains (`KUBE-SVC-`, `KUBE-SVL-`, `KUBE-EXT-`,
//! `KUBE-FW-`, `KUBE-SEP-`) and the fixed chains only kube-proxy creates,
//! userspace mode's among them (so every mode writing iptables rules, and
//! `--cleanup`, removes the others' chains as stale).
//! Not ours to delete: `KUBE-FIREWALL`, which kubelet creates identically
//! (upstream writes it but, like us, never deletes it or its jumps, so
//! cleaning up cannot strip kubelet's localnet protection), and every
//! chain of anyone else.

use crate::chains::{
    KUBE_EXTERNAL_SERVICES, KUBE_FORWARD, KUBE_MARK_MASQ, KUBE_NODEPORTS, KUBE_POSTROUTING, KUBE_PROXY_CANARY,
    KUBE_PROXY_FIREWALL, KUBE_SERVICES, USERSPACE_CHAINS, is_service_chain,
};

/// Fixed chains of ours (besides the per-service ones).
const FIXED_CHAINS: &[&str] = &[
    KUBE_SERVICES,
    KUBE_EXTERNAL_SERVICES,
    KUBE_NODEPORTS,
    KUBE_POSTROUTING,
    KUBE_MARK_MASQ,
    KUBE_FORWARD,
    KUBE_PROXY_FIREWALL,
    KUBE_PROXY_CANARY,
];

/// Chains we jump to from built-in chains: any built-in-chain rule that
/// jumps to one of these is ours (the jump), whatever its comment.
const ENTRY_CHAINS: &[&str] =
    &[KUBE_SERVICES, KUBE_EXTERNAL_SERVICES, KUBE_NODEPORTS, KUBE_POSTROUTING, KUBE_FORWARD, KUBE_PROXY_FIREWALL];

/// Whether `chain` is a chain kube-proxy-rs owns and deletes when it no
/// longer renders it or on `--cleanup`.
pub fn is_owned_chain(chain: &str) -> bool {
    is_service_chain(chain) || FIXED_CHAINS.contains(&chain) || USERSPACE_CHAINS.contains(&chain)
}

/// Whether a jump to `target` from a built-in chain is one of ours.
pub(crate) fn is_entry_chain(target: &str) -> bool {
    ENTRY_CHAINS.contains(&target) || USERSPACE_CHAINS.contains(&target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ours_are_service_and_fixed_chains_but_not_kubelets() {
        for chain in ["KUBE-SVC-ABC", "KUBE-SEP-ABC", "KUBE-FW-A", "KUBE-MARK-MASQ", "KUBE-PROXY-CANARY"] {
            assert!(is_owned_chain(chain), "{chain}");
        }
        for chain in ["KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT", "DOCKER", "KUBE-SVCX"] {
            assert!(!is_owned_chain(chain), "{chain}");
        }
        assert!(is_entry_chain("KUBE-SERVICES") && !is_entry_chain("KUBE-MARK-MASQ"));
        assert!(is_owned_chain("KUBE-PORTALS-CONTAINER") && is_entry_chain("KUBE-NODEPORT-NON-LOCAL"));
    }
}

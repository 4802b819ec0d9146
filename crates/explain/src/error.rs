//! What can go wrong explaining: rules that cannot be read or walked, a
//! dump that is not what it says, a kernel that cannot be read.

/// Why an explanation could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// The iptables tracer could not read or walk the rules.
    #[error("iptables rules: {0}")]
    Iptables(#[from] crate::tracer::TraceError),
    /// The nftables walker met something it does not model, or the table
    /// is inconsistent (a jump to a chain that does not exist, ...).
    #[error("nftables table: {0}")]
    Nftables(String),
    /// An `nft -j list ruleset` dump could not be read.
    #[error("nft JSON dump: {0}")]
    NftJson(String),
    /// A line of an IPVS dump (our format) is malformed.
    #[error("IPVS dump line {line}: {reason}: {text}")]
    IpvsDump {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The kernel could not be read (a tool failed, netlink refused).
    #[error("reading the kernel: {what}: {reason}")]
    Live {
        /// What was being read (the command, the table).
        what: String,
        /// Why it failed (its stderr, the errno).
        reason: String,
    },
    /// Nothing of kube-proxy's was found where the rules were read from.
    #[error("no kube-proxy rules in {0}")]
    NothingProgrammed(String),
}

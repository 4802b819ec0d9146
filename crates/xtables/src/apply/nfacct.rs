//! The nfacct counters upstream's iptables rules name
//! (`-m nfacct --nfacct-name ...`): created at start-up (the kernel
//! refuses a rule naming a missing counter) and read back for the
//! `kubeproxy_iptables_*_packets_total` metrics, through the host layer.

use crate::Error;

/// nfacct counter of forwarded packets dropped as conntrack-INVALID.
pub const CT_STATE_INVALID_DROPPED_PKTS: &str = "ct_state_invalid_dropped_pkts";
/// nfacct counter of NodePort packets accepted on localhost.
pub const LOCALHOST_NPS_ACCEPTED_PKTS: &str = "localhost_nps_accepted_pkts";
/// Every counter upstream's iptables rules name.
pub const NFACCT_COUNTERS: [&str; 2] = [CT_STATE_INVALID_DROPPED_PKTS, LOCALHOST_NPS_ACCEPTED_PKTS];

/// Creates every counter in [`NFACCT_COUNTERS`] that does not exist yet.
/// An error means nfacct is unusable here: render without `-m nfacct`.
pub fn apply_nfacct_counters() -> Result<(), Error> {
    NFACCT_COUNTERS.iter().try_for_each(|name| apply_nfacct_counter(name))
}

/// Creates the nfacct counter `name` unless it exists.
pub fn apply_nfacct_counter(name: &str) -> Result<(), Error> {
    Ok(host::nfacct::apply_counter(name)?)
}

/// The packet count of the nfacct counter `name`.
pub fn read_nfacct_packets(name: &str) -> Result<u64, Error> {
    Ok(host::nfacct::read_packets(name)?)
}

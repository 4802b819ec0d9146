//! iptables mode's packet counters kept by nfacct objects in the kernel,
//! read at scrape time (upstream's nfacct collectors).

use super::labels::Labels;
use super::text::Exposition;
use super::values::Counter;
use std::sync::{Arc, PoisonError, RwLock};

/// Reads the packet count of the named nfacct object; `None` when it
/// cannot be read (the metric is then left out of the scrape).
pub type NfacctReader = Arc<dyn Fn(&str) -> Option<u64> + Send + Sync>;

/// The nfacct objects upstream exports: object name, metric name, help text.
const COUNTERS: [(&str, &str, &str); 2] = [
    (
        "ct_state_invalid_dropped_pkts",
        "kubeproxy_iptables_ct_state_invalid_dropped_packets_total",
        "[ALPHA] packets dropped by iptables to work around conntrack problems",
    ),
    (
        "localhost_nps_accepted_pkts",
        "kubeproxy_iptables_localhost_nodeports_accepted_packets_total",
        "[ALPHA] Number of packets accepted on nodeports of loopback interface",
    ),
];

/// Adds one counter per readable nfacct object to each scrape.
#[derive(Default)]
pub(super) struct NfacctCollector {
    reader: RwLock<Option<NfacctReader>>,
}

impl NfacctCollector {
    pub(super) fn set_reader(&self, reader: NfacctReader) {
        *self.reader.write().unwrap_or_else(PoisonError::into_inner) = Some(reader);
    }

    /// Reads the counters now and adds those that could be read.
    pub(super) fn expose(&self, exposition: &mut Exposition) {
        let reader = self.reader.read().unwrap_or_else(PoisonError::into_inner);
        let Some(reader) = reader.as_ref() else { return };
        for (object, name, help) in COUNTERS {
            if let Some(packets) = reader(object) {
                let mut counter = Counter::default();
                counter.inc_by(packets);
                exposition.add(name, help, [(&Labels::none(), &counter)]);
            }
        }
    }
}

impl std::fmt::Debug for NfacctCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NfacctCollector").finish_non_exhaustive()
    }
}

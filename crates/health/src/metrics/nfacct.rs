//! iptables mode's packet counters kept by nfacct objects in the kernel,
//! read at scrape time (upstream's nfacct collectors).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use std::sync::{Arc, PoisonError, RwLock};

/// Reads the packet count of the named nfacct object; `None` when it
/// cannot be read (the metric is then left out of the scrape).
pub type NfacctReader = Arc<dyn Fn(&str) -> Option<u64> + Send + Sync>;

/// The nfacct objects upstream exports: object name, metric name (without
/// `kubeproxy_` and `_total`), help text.
const COUNTERS: [(&str, &str, &str); 2] = [
    (
        "ct_state_invalid_dropped_pkts",
        "iptables_ct_state_invalid_dropped_packets",
        "[ALPHA] packets dropped by iptables to work around conntrack problems",
    ),
    (
        "localhost_nps_accepted_pkts",
        "iptables_localhost_nodeports_accepted_packets",
        "[ALPHA] Number of packets accepted on nodeports of loopback interface",
    ),
];

/// Emits one counter per readable nfacct object on each scrape.
#[derive(Default)]
pub(super) struct NfacctCollector {
    reader: RwLock<Option<NfacctReader>>,
}

impl NfacctCollector {
    pub(super) fn set_reader(&self, reader: NfacctReader) {
        *self.reader.write().unwrap_or_else(PoisonError::into_inner) = Some(reader);
    }
}

impl std::fmt::Debug for NfacctCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NfacctCollector").finish_non_exhaustive()
    }
}

impl Collector for NfacctCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let reader = self.reader.read().unwrap_or_else(PoisonError::into_inner);
        let Some(reader) = reader.as_ref() else { return Ok(()) };
        for (object, name, help) in COUNTERS {
            if let Some(packets) = reader(object) {
                let counter = ConstCounter::new(packets);
                let metric_encoder = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
                counter.encode(metric_encoder)?;
            }
        }
        Ok(())
    }
}

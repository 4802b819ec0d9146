//! iptables mode's nfacct packet counters, read at each scrape of
//! `/metrics` (`kubeproxy_iptables_ct_state_invalid_dropped_packets_total`,
//! `kubeproxy_iptables_localhost_nodeports_accepted_packets_total`), as
//! upstream's nfacct collectors do. The reads happen in the proxy's own
//! network namespace; a counter that cannot be read is left out.

use health::{Metrics, ProxyMode};
use std::sync::Arc;

/// In iptables mode, lets every scrape read the nfacct counters.
pub fn read_nfacct_at_scrape(metrics: &Metrics) {
    if metrics.mode() == ProxyMode::Iptables {
        metrics.set_nfacct_reader(Arc::new(|name: &str| host::nfacct::read_packets(name).ok()));
    }
}

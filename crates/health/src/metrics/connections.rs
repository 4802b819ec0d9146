//! Userspace mode's connections per service port, read from its data path
//! at scrape time: `kubeproxy_userspace_connections_total{protocol,
//! service_port_name}` (TCP connections accepted and UDP client sessions
//! opened since the port's listeners were opened; both families and both
//! proxy ports of a port summed).

use super::labels::Labels;
use super::text::Exposition;
use super::values::Counter;
use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

/// One listener's count (the collector sums those of a service port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortConnections {
    /// `ns/name:port`, upstream's `ServicePortName` string.
    pub service_port_name: String,
    /// `TCP` or `UDP`.
    pub protocol: String,
    /// Connections or sessions so far.
    pub connections: u64,
}

/// Reads the counts of every open listener.
pub type ConnectionsReader = Arc<dyn Fn() -> Vec<PortConnections> + Send + Sync>;

const NAME: &str = "kubeproxy_userspace_connections_total";
const HELP: &str = "[ALPHA] Cumulative connections (TCP) and client sessions (UDP) proxied per service port in userspace mode";

/// Adds the counts to each scrape once a reader is set.
#[derive(Default)]
pub(super) struct ConnectionsCollector {
    reader: RwLock<Option<ConnectionsReader>>,
}

impl ConnectionsCollector {
    pub(super) fn set_reader(&self, reader: ConnectionsReader) {
        *self.reader.write().unwrap_or_else(PoisonError::into_inner) = Some(reader);
    }

    /// Reads the counts now, summed per service port and protocol.
    pub(super) fn expose(&self, exposition: &mut Exposition) {
        let reader = self.reader.read().unwrap_or_else(PoisonError::into_inner);
        let Some(reader) = reader.as_ref() else { return };
        let mut series: BTreeMap<Labels, Counter> = BTreeMap::new();
        for port in reader() {
            let labels = Labels::new(vec![("protocol", port.protocol), ("service_port_name", port.service_port_name)]);
            series.entry(labels).or_default().inc_by(port.connections);
        }
        exposition.add(NAME, HELP, series.iter());
    }
}

impl std::fmt::Debug for ConnectionsCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionsCollector").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Metrics, ProxyMode};
    use super::*;

    #[test]
    fn counts_are_summed_per_service_port_and_shown_in_userspace_mode_only() {
        let port = |name: &str, protocol: &str, connections| PortConnections { service_port_name: name.into(), protocol: protocol.into(), connections };
        let reader: ConnectionsReader = Arc::new(move || vec![port("ns/web:http", "TCP", 3), port("ns/web:http", "TCP", 2), port("ns/dns:dns", "UDP", 7)]);
        let metrics = Metrics::new(ProxyMode::Userspace);
        metrics.set_connections_reader(Arc::clone(&reader));
        let text = metrics.render();
        assert!(text.contains(&format!("# TYPE {NAME} counter\n")), "{text}");
        assert!(text.contains(&format!("{NAME}{{protocol=\"TCP\",service_port_name=\"ns/web:http\"}} 5\n")), "{text}");
        assert!(text.contains(&format!("{NAME}{{protocol=\"UDP\",service_port_name=\"ns/dns:dns\"}} 7\n")), "{text}");
        let iptables = Metrics::new(ProxyMode::Iptables);
        iptables.set_connections_reader(reader);
        assert!(!iptables.render().contains(NAME));
    }
}

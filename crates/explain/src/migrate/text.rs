//! The report as text: node-wide notes, then each Service with its
//! differences (probe, now, after, why) or `no difference`.

use super::{Difference, MigrationReport, ServiceChange};
use crate::explanation::Reach;
use std::fmt;

impl fmt::Display for MigrationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let differing = self.services.iter().filter(|s| !s.no_difference()).count();
        writeln!(f, "migrate: {} mode -> {} mode", self.from, self.to)?;
        writeln!(f, "services: {} of {} behave differently", differing, self.services.len())?;
        if !self.node.is_empty() {
            writeln!(f, "node:")?;
            for note in &self.node {
                writeln!(f, "  {}: {}", note.topic, note.why)?;
            }
        }
        if let Some(other) = &self.cluster_ip_other_ports {
            writeln!(f, "every ClusterIP, a port no Service has:")?;
            write!(f, "{other}")?;
        }
        for service in &self.services {
            write!(f, "{service}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ServiceChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let probes = self.differences.len() + self.unchanged.len();
        if self.no_difference() {
            return writeln!(f, "service {}: no difference ({probes} probes alike)", self.service);
        }
        writeln!(f, "service {}: {} of {probes} probes differ", self.service, self.differences.len())?;
        for difference in &self.differences {
            write!(f, "{difference}")?;
        }
        for note in &self.notes {
            writeln!(f, "  {}: {}", note.topic, note.why)?;
        }
        Ok(())
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "  {} {}", self.probe.port, self.probe.line())?;
        writeln!(f, "    now:   {}", endings(&self.before))?;
        writeln!(f, "    after: {}", endings(&self.after))?;
        writeln!(f, "    why:   {}", self.why)
    }
}

fn endings(reaches: &[Reach]) -> String {
    let parts: Vec<String> = reaches.iter().map(|r| r.outcome().to_string()).collect();
    parts.join(", ")
}

//! The readable form of an [`Explanation`]: the answer first, then one
//! path per ending (the most likely one), step by step.

use super::{Explanation, Reach};
use std::fmt;

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "packet:  {}", self.packet)?;
        writeln!(f, "mode:    {}", self.mode)?;
        writeln!(f, "service: {}", self.service.as_deref().unwrap_or("(none: no rule names a Service port)"))?;
        writeln!(f, "verdict:")?;
        for reach in &self.outcomes {
            writeln!(f, "  {reach}")?;
        }
        if self.affinity {
            writeln!(f, "  (session affinity: a client seen before goes back to the endpoint it reached)")?;
        }
        for assumption in &self.assumptions {
            writeln!(f, "  (assumed: {assumption})")?;
        }
        let mut first: Option<&[String]> = None;
        for reach in &self.outcomes {
            let Some(path) = self.paths.iter().filter(|p| !p.sticky).find(|p| p.outcome == reach.outcome().to_string()) else {
                continue;
            };
            writeln!(f, "path to {reach}:")?;
            let shared = first.map_or(0, |steps| steps.iter().zip(&path.steps).take_while(|(a, b)| a == b).count());
            if shared > 0 {
                writeln!(f, "    (the first {shared} steps as above)")?;
            }
            for step in &path.steps[shared..] {
                writeln!(f, "    {step}")?;
            }
            first.get_or_insert(&path.steps);
        }
        Ok(())
    }
}

impl fmt::Display for Reach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let masq = |m: bool| if m { "masqueraded" } else { "source kept" };
        match self {
            Reach::Dnat { to, masquerade, probability } => {
                write!(f, "DNAT to {to}  {:5.1}%  {}", probability * 100.0, masq(*masquerade))
            }
            Reach::Accept { masquerade, .. } => {
                write!(f, "not rewritten: no kube-proxy rule matched, routed on ({})", masq(*masquerade))
            }
            Reach::Local { .. } => f.write_str("not rewritten: delivered to the node itself"),
            Reach::Drop { reason, .. } => write!(f, "DROP: {reason}"),
            Reach::Reject { reason, .. } => write!(f, "REJECT: {reason}"),
        }
    }
}

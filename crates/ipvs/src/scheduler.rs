//! `--ipvs-scheduler`: the IPVS scheduling algorithms kube-proxy accepts.

use std::fmt;
use std::str::FromStr;

/// An IPVS scheduler. Blank (`""`) parses as the default, round-robin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Scheduler {
    /// `rr`: round-robin (the default).
    #[default]
    RoundRobin,
    /// `wrr`: weighted round-robin.
    WeightedRoundRobin,
    /// `lc`: least connection.
    LeastConnection,
    /// `wlc`: weighted least connection.
    WeightedLeastConnection,
    /// `lblc`: locality-based least connection.
    LocalityBasedLeastConnection,
    /// `lblcr`: locality-based least connection with replication.
    LocalityBasedLeastConnectionWithReplication,
    /// `sh`: source hashing.
    SourceHashing,
    /// `dh`: destination hashing.
    DestinationHashing,
    /// `sed`: shortest expected delay.
    ShortestExpectedDelay,
    /// `nq`: never queue.
    NeverQueue,
    /// `mh`: Maglev hashing (services get the `mh-port` flag, as upstream
    /// sets its `FlagSourceHash`).
    MaglevHashing,
}

impl Scheduler {
    /// Every scheduler, in the order the error message lists them.
    pub const ALL: [Scheduler; 11] = [
        Scheduler::RoundRobin,
        Scheduler::WeightedRoundRobin,
        Scheduler::LeastConnection,
        Scheduler::WeightedLeastConnection,
        Scheduler::LocalityBasedLeastConnection,
        Scheduler::LocalityBasedLeastConnectionWithReplication,
        Scheduler::SourceHashing,
        Scheduler::DestinationHashing,
        Scheduler::ShortestExpectedDelay,
        Scheduler::NeverQueue,
        Scheduler::MaglevHashing,
    ];

    /// The kernel's (and `ipvsadm`'s) name.
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::RoundRobin => "rr",
            Scheduler::WeightedRoundRobin => "wrr",
            Scheduler::LeastConnection => "lc",
            Scheduler::WeightedLeastConnection => "wlc",
            Scheduler::LocalityBasedLeastConnection => "lblc",
            Scheduler::LocalityBasedLeastConnectionWithReplication => "lblcr",
            Scheduler::SourceHashing => "sh",
            Scheduler::DestinationHashing => "dh",
            Scheduler::ShortestExpectedDelay => "sed",
            Scheduler::NeverQueue => "nq",
            Scheduler::MaglevHashing => "mh",
        }
    }
}

impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An `--ipvs-scheduler` value that names no scheduler.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid IPVS scheduler {value:?}: must be one of {valid} (blank means the default, rr)")]
pub struct UnknownScheduler {
    /// What was given.
    pub value: String,
    /// The valid names, comma-separated.
    pub valid: String,
}

impl FromStr for Scheduler {
    type Err = UnknownScheduler;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() {
            return Ok(Scheduler::default());
        }
        Scheduler::ALL.into_iter().find(|sched| sched.name() == s).ok_or_else(|| UnknownScheduler {
            value: s.to_string(),
            valid: Scheduler::ALL.map(Scheduler::name).join(", "),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_name_and_blank() {
        for sched in Scheduler::ALL {
            assert_eq!(sched.name().parse::<Scheduler>(), Ok(sched));
        }
        assert_eq!("".parse::<Scheduler>(), Ok(Scheduler::RoundRobin));
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let err = "fastest".parse::<Scheduler>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid IPVS scheduler \"fastest\": must be one of rr, wrr, lc, wlc, lblc, lblcr, sh, dh, sed, nq, mh \
             (blank means the default, rr)"
        );
        assert!("RR".parse::<Scheduler>().is_err(), "names are lower-case, as upstream");
    }
}

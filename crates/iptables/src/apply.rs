//! The applier: feeds a [`crate::Ruleset`] to `iptables-restore`.

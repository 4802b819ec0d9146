//! The pure renderer: snapshot to [`crate::Ruleset`].

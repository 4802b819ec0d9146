//! Faults (to do).

//! The masquerade mark.

use std::fmt;

/// The masquerade mark, printed as upstream does (`0x4000`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark(pub u32);

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

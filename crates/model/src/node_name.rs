//! The node an endpoint runs on, as a shared string.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A node's name, shared: thousands of endpoints name the same few nodes.
/// One pointer wide (it keeps [`crate::Endpoint`] small); reads as a
/// `str` (`endpoint.node_name.as_deref()` is an `Option<&str>`).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeName(Arc<Box<str>>);

impl NodeName {
    /// How many values share this name (as [`Arc::strong_count`]); lets an
    /// interner drop names no one uses any more.
    pub fn holders(this: &Self) -> usize {
        Arc::strong_count(&this.0)
    }
}

impl Deref for NodeName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for NodeName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for NodeName {
    fn from(name: &str) -> Self {
        Self(Arc::new(name.into()))
    }
}

impl From<String> for NodeName {
    fn from(name: String) -> Self {
        Self(Arc::new(name.into_boxed_str()))
    }
}

impl PartialEq<str> for NodeName {
    fn eq(&self, other: &str) -> bool {
        **self == *other
    }
}

impl fmt::Debug for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

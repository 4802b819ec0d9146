//! A table: the container every other object of ours lives in.

use crate::Family;

/// An nf_tables table (`table ip kube-proxy { comment "…" }`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Table {
    /// Its family.
    pub family: Family,
    /// Its name.
    pub name: String,
    /// `comment "…"`, kept as user data the way `nft` writes it.
    pub comment: Option<String>,
    /// `NFT_TABLE_F_*` flags (0 for an ordinary table).
    pub flags: u32,
}

impl Table {
    /// An ordinary table without comment.
    pub fn new(family: Family, name: impl Into<String>) -> Self {
        Self {
            family,
            name: name.into(),
            comment: None,
            flags: 0,
        }
    }

    /// The same table with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }
}

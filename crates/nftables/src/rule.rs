//! A rule: a chain name, expressions, and an optional comment.

use crate::Expr;

/// A rule of one of our chains.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rule {
    /// The chain it belongs to, by name.
    pub chain: String,
    /// What it does, as the kernel's expression list.
    pub exprs: Vec<Expr>,
    /// `comment "…"`, as user data the way `nft` writes it.
    pub comment: Option<String>,
    /// The kernel's handle; `None` for a rule not read from the kernel.
    pub handle: Option<u64>,
}

impl Rule {
    /// A rule appended to `chain`.
    pub fn new(chain: impl Into<String>, exprs: Vec<Expr>) -> Self {
        Self {
            chain: chain.into(),
            exprs,
            comment: None,
            handle: None,
        }
    }

    /// The same rule with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }
}

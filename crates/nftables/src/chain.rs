//! Chains: base chains hooked into netfilter, and regular chains that
//! rules jump or go to by name.

/// A chain of our table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Chain {
    /// Its name.
    pub name: String,
    /// Hook, priority, type and policy for a base chain; `None` for a
    /// regular chain.
    pub base: Option<BaseChain>,
    /// `comment "…"`.
    pub comment: Option<String>,
}

impl Chain {
    /// A regular chain.
    pub fn regular(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            base: None,
            comment: None,
        }
    }

    /// A base chain.
    pub fn base(name: impl Into<String>, base: BaseChain) -> Self {
        Self {
            name: name.into(),
            base: Some(base),
            comment: None,
        }
    }

    /// The same chain with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }
}

/// What makes a chain a base chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BaseChain {
    /// `type filter|nat|route`.
    pub kind: ChainType,
    /// `hook …`.
    pub hook: Hook,
    /// `priority …` as a number (`dstnat` is -100, `filter` 0, `srcnat` 100).
    pub priority: i32,
    /// `policy accept|drop`.
    pub policy: Policy,
}

/// A base chain's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChainType {
    /// `filter`.
    Filter,
    /// `nat`.
    Nat,
    /// `route`.
    Route,
}

impl ChainType {
    /// The kernel's name for it.
    pub fn name(self) -> &'static str {
        match self {
            ChainType::Filter => "filter",
            ChainType::Nat => "nat",
            ChainType::Route => "route",
        }
    }

    /// The type named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "filter" => Some(ChainType::Filter),
            "nat" => Some(ChainType::Nat),
            "route" => Some(ChainType::Route),
            _ => None,
        }
    }
}

/// A netfilter hook of the ip/ip6/inet families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hook {
    /// `prerouting`.
    Prerouting,
    /// `input`.
    Input,
    /// `forward`.
    Forward,
    /// `output`.
    Output,
    /// `postrouting`.
    Postrouting,
}

impl Hook {
    /// `NF_INET_*` number.
    pub fn number(self) -> u32 {
        match self {
            Hook::Prerouting => 0,
            Hook::Input => 1,
            Hook::Forward => 2,
            Hook::Output => 3,
            Hook::Postrouting => 4,
        }
    }

    /// The hook for an `NF_INET_*` number.
    pub fn from_number(n: u32) -> Option<Self> {
        Some(match n {
            0 => Hook::Prerouting,
            1 => Hook::Input,
            2 => Hook::Forward,
            3 => Hook::Output,
            4 => Hook::Postrouting,
            _ => return None,
        })
    }
}

/// A base chain's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// `policy accept`.
    Accept,
    /// `policy drop`.
    Drop,
}

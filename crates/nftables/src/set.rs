//! Sets and maps (a map is a set with data: a verdict map's data is a
//! verdict), named or anonymous, and their elements.

use crate::{DataType, Value, Verdict};

/// `NFT_SET_*` flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SetFlags(pub u32);

impl SetFlags {
    /// An anonymous set, bound to the rule that uses it.
    pub const ANONYMOUS: SetFlags = SetFlags(0x1);
    /// Elements cannot change after the transaction that made it.
    pub const CONSTANT: SetFlags = SetFlags(0x2);
    /// `flags interval`.
    pub const INTERVAL: SetFlags = SetFlags(0x4);
    /// A map.
    pub const MAP: SetFlags = SetFlags(0x8);
    /// `flags timeout`.
    pub const TIMEOUT: SetFlags = SetFlags(0x10);
    /// `flags dynamic` (updated from the packet path).
    pub const DYNAMIC: SetFlags = SetFlags(0x20);
    /// A concatenated key in an interval set (what `nft` sets for
    /// `flags interval` with a concatenation; not for hash sets).
    pub const CONCAT: SetFlags = SetFlags(0x80);

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: SetFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for SetFlags {
    type Output = SetFlags;
    fn bitor(self, rhs: SetFlags) -> SetFlags {
        SetFlags(self.0 | rhs.0)
    }
}

/// A set or map of our table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Set {
    /// Its name; `__set%d` for an anonymous set the kernel names.
    pub name: String,
    /// The transaction-local id rules use to name a set created in the
    /// same transaction (needed for anonymous sets, whose names the
    /// kernel picks). Not read back.
    pub id: Option<u32>,
    /// Key type; more than one field is a concatenation (`a . b . c`).
    pub key: Vec<DataType>,
    /// Data type for a map (`: verdict`, `: ipv4_addr . inet_service`).
    pub data: Option<Vec<DataType>>,
    /// Flags.
    pub flags: SetFlags,
    /// `timeout …` in milliseconds.
    pub timeout_ms: Option<u64>,
    /// `size …`.
    pub size: Option<u32>,
    /// `comment "…"`.
    pub comment: Option<String>,
    /// `typeof …`: the expressions whose types key and data take, as `nft`
    /// keeps them in the set's user data (else `nft` lists the key's type
    /// by number when nothing else names it).
    pub type_of: Option<TypeOf>,
}

/// The `typeof` declarations of our sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypeOf {
    /// `typeof numgen random mod <modulus> : ip daddr . th dport`
    /// (`ip6 daddr` when `v6`): the shared endpoint maps.
    NumgenToDaddrDport {
        /// The `numgen` modulus.
        modulus: u32,
        /// IPv6 (else IPv4).
        v6: bool,
    },
}

impl Set {
    /// A named set with key `key`.
    pub fn new(name: impl Into<String>, key: Vec<DataType>) -> Self {
        Self {
            name: name.into(),
            id: None,
            key,
            data: None,
            flags: SetFlags::default(),
            timeout_ms: None,
            size: None,
            comment: None,
            type_of: None,
        }
    }

    /// A named map from `key` to `data`.
    pub fn map(name: impl Into<String>, key: Vec<DataType>, data: Vec<DataType>) -> Self {
        let mut set = Self::new(name, key);
        set.flags = set.flags | SetFlags::MAP;
        set.data = Some(data);
        set
    }

    /// An anonymous constant set or map (`{ … }` inside a rule), known in
    /// its transaction as `id`.
    pub fn anonymous(id: u32, key: Vec<DataType>, data: Option<Vec<DataType>>) -> Self {
        let mut set = match data {
            Some(data) => Self::map("__set%d", key, data),
            None => Self::new("__set%d", key),
        };
        set.id = Some(id);
        set.flags = set.flags | SetFlags::ANONYMOUS | SetFlags::CONSTANT;
        set
    }

    /// The same set with these flags added.
    pub fn with_flags(mut self, flags: SetFlags) -> Self {
        self.flags = self.flags | flags;
        self
    }

    /// The same set with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }

    /// Whether it is a verdict map.
    pub fn is_verdict_map(&self) -> bool {
        self.data.as_deref() == Some(&[DataType::Verdict])
    }
}

/// An element of a set or map. What few elements carry besides key and
/// data (an interval's end, a timeout, a comment) is boxed apart, so the
/// common element is 64 bytes, not 128: at 10,000 services the shared
/// sets hold some 60,000 elements through every full sync.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Element {
    /// Its key (one value per field of the set's key type).
    pub key: Vec<Value>,
    /// A map element's data.
    pub data: Option<ElementData>,
    /// The rest, `None` when all of it is unset (so equal elements
    /// compare equal however they were built).
    extra: Option<Box<ElementExtra>>,
}

/// What few elements carry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
struct ElementExtra {
    key_end: Option<Vec<Value>>,
    interval_end: bool,
    timeout_ms: Option<u64>,
    comment: Option<String>,
}

/// A map element's data.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ElementData {
    /// A verdict map's verdict.
    Verdict(Verdict),
    /// A data map's values.
    Values(Vec<Value>),
}

impl Element {
    /// A set element.
    pub fn new(key: Vec<Value>) -> Self {
        Self {
            key,
            data: None,
            extra: None,
        }
    }

    /// A verdict map element.
    pub fn verdict(key: Vec<Value>, verdict: Verdict) -> Self {
        Self {
            data: Some(ElementData::Verdict(verdict)),
            ..Self::new(key)
        }
    }

    /// A data map element.
    pub fn data(key: Vec<Value>, data: Vec<Value>) -> Self {
        Self {
            data: Some(ElementData::Values(data)),
            ..Self::new(key)
        }
    }

    /// An interval set's end marker at `key` (the first value past a range).
    pub fn interval_end(key: Vec<Value>) -> Self {
        let mut e = Self::new(key);
        e.set_interval_end(true);
        e
    }

    /// The same element with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.set_comment(Some(comment.into()));
        self
    }

    /// The end of a range in a concatenated interval set.
    pub fn key_end(&self) -> Option<&[Value]> {
        self.extra.as_ref()?.key_end.as_deref()
    }

    /// Whether it marks the end of an interval in an interval set.
    pub fn is_interval_end(&self) -> bool {
        self.extra.as_ref().is_some_and(|x| x.interval_end)
    }

    /// Its own timeout in milliseconds.
    pub fn timeout_ms(&self) -> Option<u64> {
        self.extra.as_ref()?.timeout_ms
    }

    /// `comment "…"`.
    pub fn comment(&self) -> Option<&str> {
        self.extra.as_ref()?.comment.as_deref()
    }

    /// Sets [`Element::key_end`].
    pub fn set_key_end(&mut self, key_end: Option<Vec<Value>>) {
        self.change(|x| x.key_end = key_end);
    }

    /// Sets [`Element::is_interval_end`].
    pub fn set_interval_end(&mut self, end: bool) {
        self.change(|x| x.interval_end = end);
    }

    /// Sets [`Element::timeout_ms`].
    pub fn set_timeout_ms(&mut self, timeout_ms: Option<u64>) {
        self.change(|x| x.timeout_ms = timeout_ms);
    }

    /// Sets [`Element::comment`].
    pub fn set_comment(&mut self, comment: Option<String>) {
        self.change(|x| x.comment = comment);
    }

    fn change(&mut self, f: impl FnOnce(&mut ElementExtra)) {
        let mut extra = self.extra.take().unwrap_or_default();
        f(&mut extra);
        if *extra != ElementExtra::default() {
            self.extra = Some(extra);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_element_is_small_and_its_rare_fields_round_trip() {
        assert!(std::mem::size_of::<Element>() <= 64);
        let key = || vec![Value::Port(80)];
        let mut e = Element::new(key());
        e.set_key_end(Some(vec![Value::Port(90)]));
        e.set_timeout_ms(Some(5_000));
        e.set_comment(Some("ns/svc:http".into()));
        e.set_interval_end(true);
        assert_eq!(e.key_end(), Some(&[Value::Port(90)][..]));
        assert_eq!(e.timeout_ms(), Some(5_000));
        assert_eq!(e.comment(), Some("ns/svc:http"));
        assert!(e.is_interval_end());
        assert_ne!(e, Element::new(key()));
        // cleared one by one, it equals an element that never had them
        e.set_key_end(None);
        e.set_timeout_ms(None);
        e.set_comment(None);
        assert_ne!(e, Element::new(key()));
        e.set_interval_end(false);
        assert_eq!(e, Element::new(key()));
    }
}

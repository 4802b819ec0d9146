//! What a read of the file keeps per object between reads: its kind and
//! `namespace/name`, the text in one allocation shared by every index of
//! the read (most documents give one object: its key is held inline).

use crate::kube::kinds::ObjectKey;
use std::sync::Arc;
use tracker::ObjectKind;

/// An object of the file: its kind and `namespace/name`. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct HeldKey {
    kind: ObjectKind,
    key: Arc<str>,
}

impl HeldKey {
    pub(super) fn new(kind: ObjectKind, key: &ObjectKey) -> Self {
        Self {
            kind,
            key: key.to_string().into(),
        }
    }

    pub(super) fn kind(&self) -> ObjectKind {
        self.kind
    }

    /// The object's key, as the source names objects.
    pub(super) fn object_key(&self) -> ObjectKey {
        ObjectKey::from_text(&self.key)
    }
}

/// The objects one document gave, in order.
#[derive(Debug, Clone)]
pub(super) enum Keys {
    /// One object (nearly every document).
    One(HeldKey),
    /// None, or more than one (a `List`).
    Many(Box<[HeldKey]>),
}

impl Keys {
    pub(super) fn iter(&self) -> std::slice::Iter<'_, HeldKey> {
        match self {
            Keys::One(key) => std::slice::from_ref(key).iter(),
            Keys::Many(keys) => keys.iter(),
        }
    }
}

impl Default for Keys {
    fn default() -> Self {
        Keys::Many(Box::default())
    }
}

impl From<Vec<HeldKey>> for Keys {
    fn from(mut keys: Vec<HeldKey>) -> Self {
        match (keys.pop(), keys.is_empty()) {
            (Some(key), true) => Keys::One(key),
            (Some(key), false) => {
                keys.push(key);
                Keys::Many(keys.into_boxed_slice())
            }
            (None, _) => Keys::Many(Box::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_gives_back_its_kind_and_name() {
        let key = HeldKey::new(ObjectKind::EndpointSlice, &ObjectKey::new("ns", "a-1"));
        assert_eq!(key.kind(), ObjectKind::EndpointSlice);
        assert_eq!(key.object_key(), ObjectKey::new("ns", "a-1"));
        assert_eq!(HeldKey::new(ObjectKind::Node, &ObjectKey::new("", "n")).object_key().to_string(), "/n");
    }

    #[test]
    fn keys_keep_their_order() {
        let key = |name| HeldKey::new(ObjectKind::Service, &ObjectKey::new("ns", name));
        for names in [vec![], vec!["a"], vec!["a", "b", "c"]] {
            let keys = Keys::from(names.iter().map(|n| key(*n)).collect::<Vec<_>>());
            assert!(keys.iter().eq(names.iter().map(|n| key(*n)).collect::<Vec<_>>().iter()));
        }
    }
}

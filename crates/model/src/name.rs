//! Names of Services and of their ports, shared rather than copied: every
//! snapshot, change set and tracker index holds the same few bytes per
//! service behind a pointer.
//!
//! Both types dereference to a plain struct with public fields, so
//! `name.port`, `name.service.namespace` read (and, copy-on-write, assign)
//! as they would on an owned struct; only construction goes through
//! [`ServiceName::new`] and [`ServicePortName::new`] / [`ServicePortName::of`].

use crate::Protocol;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// The two parts of a [`ServiceName`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceNameParts {
    /// Namespace of the Service.
    pub namespace: String,
    /// Name of the Service.
    pub name: String,
}

/// `namespace/name` of a Service. Cheap to clone (the strings are shared);
/// compares, orders and hashes by its parts.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceName(Arc<ServiceNameParts>);

impl ServiceName {
    /// Builds a name from its two parts.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self(Arc::new(ServiceNameParts {
            namespace: namespace.into(),
            name: name.into(),
        }))
    }
}

impl Deref for ServiceName {
    type Target = ServiceNameParts;

    fn deref(&self) -> &ServiceNameParts {
        &self.0
    }
}

impl DerefMut for ServiceName {
    /// Copy-on-write: other holders of the name keep the old value.
    fn deref_mut(&mut self) -> &mut ServiceNameParts {
        Arc::make_mut(&mut self.0)
    }
}

impl fmt::Debug for ServiceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceName")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .finish()
    }
}

impl fmt::Display for ServiceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The parts of a [`ServicePortName`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServicePortNameParts {
    /// The Service.
    pub service: ServiceName,
    /// The port's `name` (may be empty).
    pub port: String,
    /// The port's protocol.
    pub protocol: Protocol,
}

/// Identifies one port of one Service: upstream's `ServicePortName`.
///
/// Displays as upstream's `String()`: `ns/name:port`, or `ns/name` when the
/// port has no name. The protocol is not part of the display but is part of
/// the identity (and of every chain hash). Cheap to clone, like
/// [`ServiceName`]; compares, orders and hashes by service, port, protocol.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServicePortName(Arc<ServicePortNameParts>);

impl ServicePortName {
    /// Builds a name from its parts.
    pub fn new(namespace: &str, name: &str, port: &str, protocol: Protocol) -> Self {
        Self::of(ServiceName::new(namespace, name), port, protocol)
    }

    /// A port of `service` (sharing its name).
    pub fn of(service: ServiceName, port: impl Into<String>, protocol: Protocol) -> Self {
        Self(Arc::new(ServicePortNameParts {
            service,
            port: port.into(),
            protocol,
        }))
    }
}

impl Deref for ServicePortName {
    type Target = ServicePortNameParts;

    fn deref(&self) -> &ServicePortNameParts {
        &self.0
    }
}

impl DerefMut for ServicePortName {
    /// Copy-on-write: other holders of the name keep the old value.
    fn deref_mut(&mut self) -> &mut ServicePortNameParts {
        Arc::make_mut(&mut self.0)
    }
}

impl fmt::Debug for ServicePortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServicePortName")
            .field("service", &self.service)
            .field("port", &self.port)
            .field("protocol", &self.protocol)
            .finish()
    }
}

impl fmt::Display for ServicePortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.port.is_empty() {
            write!(f, "{}", self.service)
        } else {
            write!(f, "{}:{}", self.service, self.port)
        }
    }
}

/// The entries of `map` (keyed by port name) of `service`'s ports, in
/// order: the keys from `service`'s smallest port name up to the first
/// key of another service.
pub fn ports_of<'a, V>(
    map: &'a std::collections::BTreeMap<ServicePortName, V>,
    service: &'a ServiceName,
) -> impl Iterator<Item = (&'a ServicePortName, &'a V)> + 'a {
    let first = ServicePortName::of(service.clone(), "", crate::Protocol::Tcp);
    map.range(first..).take_while(move |(n, _)| n.service == *service)
}

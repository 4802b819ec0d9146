//! The open listeners behind a [`crate::Forwarder`] and the reconciliation
//! [`crate::Forwarder::apply`] does: keep (new backends), open, hand over,
//! close.

use crate::shared::Shared;
use crate::{Applied, Bound, Counters, Error, ForwarderOptions, Listener, ListenerKey};
use model::Protocol;
use std::collections::{BTreeMap, HashSet};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::runtime::Handle;
use tokio::task::AbortHandle;

/// Every open listener, and where their tasks run.
#[derive(Debug)]
pub(crate) struct Registry {
    options: ForwarderOptions,
    runtime: Handle,
    open: Mutex<BTreeMap<ListenerKey, Open>>,
}

/// One open listener: its socket lives in its task, closed when the task
/// is aborted (on drop).
#[derive(Debug)]
struct Open {
    addr: SocketAddr,
    protocol: Protocol,
    shared: Arc<Shared>,
    task: AbortHandle,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Registry {
    pub(crate) fn new(options: ForwarderOptions) -> Self {
        crate::limits::raise_open_files();
        Self { options, runtime: Handle::current(), open: Mutex::new(BTreeMap::new()) }
    }

    pub(crate) fn apply(&self, wanted: &[Listener]) -> Applied {
        let _runtime = self.runtime.enter();
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let keys: HashSet<&ListenerKey> = wanted.iter().map(|listener| &listener.key).collect();
        let gone: Vec<ListenerKey> = open.keys().filter(|key| !keys.contains(key)).cloned().collect();
        let mut removed: Vec<Open> = gone.iter().filter_map(|key| open.remove(key)).collect();
        let mut applied = Applied::default();
        let mut taken = held_ports(&open);
        for listener in wanted {
            if let Some(kept) = open.get(&listener.key) {
                kept.shared.update(&listener.backends, listener.affinity);
            } else if let Some(handed) = hand_over(&mut removed, listener) {
                open.insert(listener.key.clone(), handed);
            } else {
                match self.open_listener(listener, &taken) {
                    Ok(new) => {
                        taken.insert((new.protocol, new.addr.port()));
                        open.insert(listener.key.clone(), new);
                    }
                    Err(err) => applied.failed.push((listener.key.clone(), err)),
                }
            }
        }
        drop(removed);
        applied.bound = open.iter().map(|(key, open)| Bound { key: key.clone(), addr: open.addr }).collect();
        applied
    }

    pub(crate) fn counters(&self) -> Vec<(ListenerKey, Counters)> {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.iter().map(|(key, open)| (key.clone(), open.shared.tally.read())).collect()
    }

    fn open_listener(&self, listener: &Listener, taken: &HashSet<(Protocol, u16)>) -> Result<Open, Error> {
        let protocol = listener.key.service_port.protocol;
        let name = listener.key.service_port.to_string();
        let shared = Arc::new(Shared::new(name.clone(), &listener.backends, listener.affinity));
        let task_shared = Arc::clone(&shared);
        let taken = |port| taken.contains(&(protocol, port));
        let fail = |addr, source| Error::Bind { key: name.clone(), addr, protocol, source };
        let (addr, task) = match protocol {
            Protocol::Tcp => {
                let socket = self.bind(listener.bind, taken, crate::tcp::listen, fail)?;
                let addr = socket.local_addr().map_err(|e| fail(listener.bind, e))?;
                (addr, self.runtime.spawn(crate::tcp::accept_loop(socket, task_shared)).abort_handle())
            }
            Protocol::Udp => {
                let socket = self.bind(listener.bind, taken, crate::udp::bind, fail)?;
                let addr = socket.local_addr().map_err(|e| fail(listener.bind, e))?;
                let idle = self.options.udp_idle_timeout;
                (addr, self.runtime.spawn(crate::udp::serve(socket, task_shared, idle)).abort_handle())
            }
            Protocol::Sctp => return Err(Error::Unsupported(name, protocol)),
        };
        tracing::debug!(listener = %shared.name, role = ?listener.key.role, %addr, "listener opened");
        Ok(Open { addr, protocol, shared, task })
    }

    /// Binds `addr`; port 0 takes the first free port of the range (ports
    /// `taken` says are held are skipped without trying), or any port the kernel gives
    /// when there is no range.
    fn bind<S>(
        &self,
        addr: SocketAddr,
        taken: impl Fn(u16) -> bool,
        bind: impl Fn(SocketAddr) -> io::Result<S>,
        fail: impl Fn(SocketAddr, io::Error) -> Error,
    ) -> Result<S, Error> {
        let Some(range) = self.options.port_range.filter(|_| addr.port() == 0) else {
            return bind(addr).map_err(|err| fail(addr, err));
        };
        for port in range.ports().filter(|&port| !taken(port)) {
            let candidate = SocketAddr::new(addr.ip(), port);
            match bind(candidate) {
                Ok(socket) => return Ok(socket),
                Err(err) if err.kind() == io::ErrorKind::AddrInUse => {}
                Err(err) => return Err(fail(candidate, err)),
            }
        }
        Err(Error::RangeExhausted(range))
    }
}

/// The ports this forwarder's listeners hold, with their protocol.
fn held_ports(open: &BTreeMap<ListenerKey, Open>) -> HashSet<(Protocol, u16)> {
    open.values().map(|open| (open.protocol, open.addr.port())).collect()
}

/// A closed listener's socket bound to exactly the address a new key asks
/// for goes to that key (a renamed service port keeping its node port),
/// rather than closing it and racing its release to bind again.
fn hand_over(removed: &mut Vec<Open>, listener: &Listener) -> Option<Open> {
    let protocol = listener.key.service_port.protocol;
    if listener.bind.port() == 0 {
        return None;
    }
    let at = removed.iter().position(|open| open.addr == listener.bind && open.protocol == protocol)?;
    let handed = removed.swap_remove(at);
    handed.shared.update(&listener.backends, listener.affinity);
    Some(handed)
}


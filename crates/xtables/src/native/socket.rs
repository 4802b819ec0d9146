//! The x_tables socket options: read a table (`IPT_SO_GET_INFO`,
//! `IPT_SO_GET_ENTRIES`), replace it (`IPT_SO_SET_REPLACE`) and carry the
//! counters of the rules kept (`IPT_SO_SET_ADD_COUNTERS`), as libiptc's
//! commit does. The `ip6_tables` options have the same numbers and
//! layouts at `IPPROTO_IPV6`. Acts in the calling thread's network
//! namespace; needs `CAP_NET_ADMIN`.
// The x_tables socket options have no safe wrapper: raw getsockopt/setsockopt.
#![allow(unsafe_code)]

use super::layout::{Family, u32_at};
use super::table::{Blob, HEAD, Image};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SO_GET_INFO: libc::c_int = 64;
const SO_GET_ENTRIES: libc::c_int = 65;
const SO_SET_REPLACE: libc::c_int = 64;
const SO_SET_ADD_COUNTERS: libc::c_int = 65;
const NAME_LEN: usize = 32;
/// `struct ipt_getinfo`: name, valid_hooks, hook_entry[5], underflow[5], num_entries, size.
const GETINFO_LEN: usize = NAME_LEN + 4 + 20 + 20 + 4 + 4;
/// Offset of the entries in `struct ipt_get_entries`.
const GET_ENTRIES_HEAD: usize = 40;
/// Offset of the counters in `struct xt_counters_info`.
const COUNTERS_HEAD: usize = 40;
const COUNTER_LEN: usize = 16;

/// A raw socket of `family` for the table options.
#[derive(Debug)]
pub struct Socket {
    fd: OwnedFd,
    family: Family,
}

impl Socket {
    /// Opens one (in the calling thread's network namespace).
    pub fn open(family: Family) -> io::Result<Self> {
        let domain = match family {
            Family::V4 => libc::AF_INET,
            Family::V6 => libc::AF_INET6,
        };
        // SAFETY: plain socket(2); the descriptor is owned below.
        let fd = unsafe { libc::socket(domain, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::IPPROTO_RAW) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor nobody else owns.
        Ok(Self { fd: unsafe { OwnedFd::from_raw_fd(fd) }, family })
    }

    fn level(&self) -> libc::c_int {
        match self.family {
            Family::V4 => libc::IPPROTO_IP,
            Family::V6 => libc::IPPROTO_IPV6,
        }
    }

    /// Reads table `name` whole (loading its module as the tools do is
    /// the kernel's business: a missing table is an error).
    pub fn read(&self, name: &str) -> io::Result<Image> {
        let mut info = named(name, GETINFO_LEN)?;
        self.get(SO_GET_INFO, &mut info)?;
        let valid_hooks = u32_at(&info, NAME_LEN);
        let hooks = |at: usize| std::array::from_fn(|h| u32_at(&info, at + 4 * h));
        let (hook_entry, underflow) = (hooks(NAME_LEN + 4), hooks(NAME_LEN + 24));
        let size = u32_at(&info, GETINFO_LEN - 4);
        let mut entries = named(name, GET_ENTRIES_HEAD + size as usize)?;
        entries[NAME_LEN..NAME_LEN + 4].copy_from_slice(&size.to_ne_bytes());
        self.get(SO_GET_ENTRIES, &mut entries)?;
        Image::read(self.family, name, valid_hooks, hook_entry, underflow, &entries[GET_ENTRIES_HEAD..])
            .map_err(|problem| io::Error::new(io::ErrorKind::InvalidData, problem))
    }

    /// Replaces table `image` with `blob` (laid out from it; its header
    /// is filled in here), then adds back the counters of the entries kept.
    pub fn replace(&self, image: &Image, blob: &mut Blob) -> io::Result<()> {
        let mut old = vec![0u8; image.old_entries as usize * COUNTER_LEN];
        let size = u32::try_from(blob.entries_bytes().len()).map_err(|_| io::ErrorKind::InvalidInput)?;
        let (entries, hook_entry, underflow) = (blob.entries, blob.hook_entry, blob.underflow);
        let buf = &mut blob.bytes;
        buf[..HEAD].copy_from_slice(&named(&image.name, HEAD)?);
        let put = |buf: &mut [u8], at: usize, v: u32| buf[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        put(buf, 32, image.valid_hooks);
        put(buf, 36, entries);
        put(buf, 40, size);
        for hook in 0..5 {
            put(buf, 44 + 4 * hook, hook_entry[hook]);
            put(buf, 64 + 4 * hook, underflow[hook]);
        }
        put(buf, 84, image.old_entries);
        buf[88..96].copy_from_slice(&(old.as_mut_ptr() as u64).to_ne_bytes());
        // `old` receives the old table's counters: alive and sized above.
        self.set(SO_SET_REPLACE, buf)?;
        self.add_counters(&image.name, blob, &old)
    }

    fn add_counters(&self, name: &str, blob: &Blob, old: &[u8]) -> io::Result<()> {
        let mut buf = named(name, COUNTERS_HEAD + blob.old.len() * COUNTER_LEN)?;
        buf[NAME_LEN..NAME_LEN + 4].copy_from_slice(&blob.entries.to_ne_bytes());
        for (i, from) in blob.old.iter().enumerate() {
            let Some(from) = from.map(|f| f as usize * COUNTER_LEN).filter(|f| f + COUNTER_LEN <= old.len()) else { continue };
            let at = COUNTERS_HEAD + i * COUNTER_LEN;
            buf[at..at + COUNTER_LEN].copy_from_slice(&old[from..from + COUNTER_LEN]);
        }
        self.set(SO_SET_ADD_COUNTERS, &buf)
    }

    fn get(&self, option: libc::c_int, buf: &mut [u8]) -> io::Result<()> {
        let mut len = libc::socklen_t::try_from(buf.len()).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: buf is valid for len bytes; the kernel writes at most len.
        let rc = unsafe { libc::getsockopt(self.fd.as_raw_fd(), self.level(), option, buf.as_mut_ptr().cast(), &mut len) };
        if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }

    fn set(&self, option: libc::c_int, buf: &[u8]) -> io::Result<()> {
        let len = libc::socklen_t::try_from(buf.len()).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: buf is valid for len bytes; for SET_REPLACE it holds a
        // counters pointer to a live buffer of num_counters entries.
        let rc = unsafe { libc::setsockopt(self.fd.as_raw_fd(), self.level(), option, buf.as_ptr().cast(), len) };
        if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }
}

fn named(name: &str, len: usize) -> io::Result<Vec<u8>> {
    if name.len() >= NAME_LEN {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("table name {name:?} too long")));
    }
    let mut buf = vec![0u8; len];
    buf[..name.len()].copy_from_slice(name.as_bytes());
    Ok(buf)
}

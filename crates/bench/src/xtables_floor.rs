//! The floor of any write through the legacy (x_tables) kernel interface:
//! the kernel has no incremental update, every change replaces a whole
//! table with `IPT_SO_SET_REPLACE`. This reads the current table
//! (`IPT_SO_GET_INFO`, `IPT_SO_GET_ENTRIES`) and writes it back unchanged
//! with `IPT_SO_SET_REPLACE`, timing each call: what a user space that
//! spends nothing of its own would still pay for a one-rule change.
//!
//! Runs in the caller's network namespace (wrap it in `ip netns exec`);
//! the table is replaced by an identical copy (its counters restart).
// The x_tables socket options have no safe wrapper: raw getsockopt/setsockopt.
#![allow(unsafe_code)]

use anyhow::{Context, Result, bail};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

const IPT_SO_SET_REPLACE: libc::c_int = 64;
const IPT_SO_GET_INFO: libc::c_int = 64;
const IPT_SO_GET_ENTRIES: libc::c_int = 65;
const TABLE_NAME_LEN: usize = 32;
/// `struct ipt_getinfo`: name, valid_hooks, hook_entry[5], underflow[5], num_entries, size.
const GETINFO_LEN: usize = TABLE_NAME_LEN + 4 + 20 + 20 + 4 + 4;
/// Offset of `entrytable` in `struct ipt_get_entries` (name, size, 8-aligned entries).
const GET_ENTRIES_HEAD: usize = 40;
/// Offset of `entries` in `struct ipt_replace` (…, num_counters, counters pointer).
const REPLACE_HEAD: usize = 96;
/// `struct xt_counters`: two u64.
const COUNTER_LEN: usize = 16;

/// What one read-and-replace of a table cost.
#[derive(Debug, Clone, Copy)]
pub struct Round {
    /// Rules (entries) in the table, chain heads and tails included.
    pub entries: u32,
    /// Size of the table blob in bytes.
    pub bytes: u32,
    /// `IPT_SO_GET_INFO` + `IPT_SO_GET_ENTRIES`.
    pub read: Duration,
    /// `IPT_SO_SET_REPLACE` of the same blob.
    pub replace: Duration,
}

/// `repeats` rounds on `table` (e.g. `nat`), as a report.
pub fn run_floor(table: &str, repeats: usize) -> Result<String> {
    let socket = raw_socket()?;
    let mut out = format!(
        "x_tables floor, table {table} (read = GET_INFO + GET_ENTRIES, replace = SET_REPLACE)\n"
    );
    for n in 1..=repeats {
        let round = read_and_replace(&socket, table)?;
        out.push_str(&format!(
            "round {n}: {} entries, {:.1} MiB: read {:.1} ms, replace {:.1} ms\n",
            round.entries,
            f64::from(round.bytes) / (1024.0 * 1024.0),
            round.read.as_secs_f64() * 1e3,
            round.replace.as_secs_f64() * 1e3,
        ));
    }
    Ok(out)
}

fn raw_socket() -> Result<OwnedFd> {
    // SAFETY: plain socket(2); the descriptor is owned below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("raw socket (needs root)");
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn read_and_replace(socket: &OwnedFd, table: &str) -> Result<Round> {
    let start = Instant::now();
    let info = get_info(socket, table)?;
    let entries = get_entries(socket, table, info.size)?;
    let read = start.elapsed();
    let start = Instant::now();
    set_replace(socket, &info, &entries)?;
    Ok(Round {
        entries: info.num_entries,
        bytes: info.size,
        read,
        replace: start.elapsed(),
    })
}

struct Info {
    raw: [u8; GETINFO_LEN],
    num_entries: u32,
    size: u32,
}

fn u32_at(buf: &[u8], offset: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&buf[offset..offset + 4]);
    u32::from_ne_bytes(word)
}

fn named(table: &str, len: usize) -> Result<Vec<u8>> {
    if table.len() >= TABLE_NAME_LEN {
        bail!("table name {table:?} too long");
    }
    let mut buf = vec![0u8; len];
    buf[..table.len()].copy_from_slice(table.as_bytes());
    Ok(buf)
}

fn get_info(socket: &OwnedFd, table: &str) -> Result<Info> {
    let mut buf = named(table, GETINFO_LEN)?;
    getsockopt(socket, IPT_SO_GET_INFO, &mut buf)
        .with_context(|| format!("IPT_SO_GET_INFO {table}"))?;
    let mut raw = [0u8; GETINFO_LEN];
    raw.copy_from_slice(&buf);
    Ok(Info {
        raw,
        num_entries: u32_at(&buf, GETINFO_LEN - 8),
        size: u32_at(&buf, GETINFO_LEN - 4),
    })
}

fn get_entries(socket: &OwnedFd, table: &str, size: u32) -> Result<Vec<u8>> {
    let mut buf = named(table, GET_ENTRIES_HEAD + size as usize)?;
    buf[TABLE_NAME_LEN..TABLE_NAME_LEN + 4].copy_from_slice(&size.to_ne_bytes());
    getsockopt(socket, IPT_SO_GET_ENTRIES, &mut buf)
        .with_context(|| format!("IPT_SO_GET_ENTRIES {table}"))?;
    Ok(buf.split_off(GET_ENTRIES_HEAD))
}

/// `struct ipt_replace` with the table's own hooks and entries.
fn set_replace(socket: &OwnedFd, info: &Info, entries: &[u8]) -> Result<()> {
    let mut counters = vec![0u8; info.num_entries as usize * COUNTER_LEN];
    let mut buf = vec![0u8; REPLACE_HEAD + entries.len()];
    buf[..TABLE_NAME_LEN + 4].copy_from_slice(&info.raw[..TABLE_NAME_LEN + 4]); // name, valid_hooks
    buf[36..40].copy_from_slice(&info.num_entries.to_ne_bytes());
    buf[40..44].copy_from_slice(&info.size.to_ne_bytes());
    buf[44..84].copy_from_slice(&info.raw[36..76]); // hook_entry[5], underflow[5]
    buf[84..88].copy_from_slice(&info.num_entries.to_ne_bytes());
    buf[88..96].copy_from_slice(&(counters.as_mut_ptr() as u64).to_ne_bytes());
    buf[REPLACE_HEAD..].copy_from_slice(entries);
    // SAFETY: buf is a complete ipt_replace whose counters pointer points
    // at `counters`, alive and large enough for num_counters entries.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            IPT_SO_SET_REPLACE,
            buf.as_ptr().cast(),
            buf.len() as u32,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error()).context("IPT_SO_SET_REPLACE");
    }
    Ok(())
}

fn getsockopt(socket: &OwnedFd, option: libc::c_int, buf: &mut [u8]) -> std::io::Result<()> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is valid for len bytes; the kernel writes at most len.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            option,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

//! The native writer in a child process: `kube-proxy-rs xtables-restore
//! --family ipv4|ipv6 --wait=N` (hidden) reads on stdin exactly the input
//! `iptables-restore --noflush --counters --wait=N` is fed, takes the
//! xtables lock (`XTABLES_LOCKFILE`, as the tool), applies it with
//! [`super::restore::Restore`] and exits as the tool does: 0 written,
//! [`EXIT_REFUSED`] with `line N failed` on stderr when the kernel refused a
//! table, [`EXIT_LOCKED`] when another program held the lock. An input it
//! cannot encode changes nothing and exits [`EXIT_DECLINED`]: the applier
//! then feeds the same input to `iptables-restore`.
//!
//! Why a child: the table read back (100 MiB at 10,000 services × 10
//! endpoints), the layout and the replace blob are the child's memory,
//! given back when it exits (upstream's `iptables-restore` child is not in
//! upstream's RSS either), and its 1–2 s of blocking socket calls do not
//! hold the proxy's async workers.

use super::layout::Family;
use super::lock;
use super::restore::{CommitError, Restore};
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// The hidden subcommand of the proxy binary that runs the child.
pub const SUBCOMMAND: &str = "xtables-restore";

/// Exit status: the kernel refused a table (as `iptables-restore`).
pub const EXIT_REFUSED: i32 = 1;
/// Exit status: bad arguments (as the tool's `PARAMETER_PROBLEM`).
pub const EXIT_USAGE: i32 = 2;
/// Exit status: another program held the lock past the wait (as the tool's
/// `RESOURCE_PROBLEM`).
pub const EXIT_LOCKED: i32 = 4;
/// Exit status: the input holds something the native writer cannot
/// encode, or a table could not be read; nothing was written.
pub const EXIT_DECLINED: i32 = 65;

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Registers the program that runs [`SUBCOMMAND`] (the proxy registers
/// itself, `/proc/self/exe`, at start): from then on the native writer is
/// the default for legacy tables and runs in that child.
pub fn set_program(path: PathBuf) {
    let _ = PROGRAM.set(path);
}

/// The registered child program, if any.
pub fn program() -> Option<&'static PathBuf> {
    PROGRAM.get()
}

/// The child's arguments for `family`, waiting `wait_seconds` for the lock.
pub fn args(family: Family, wait_seconds: u8) -> Vec<String> {
    let family = match family {
        Family::V4 => "ipv4",
        Family::V6 => "ipv6",
    };
    vec![SUBCOMMAND.into(), "--family".into(), family.into(), format!("--wait={wait_seconds}")]
}

/// Whether `args` (the whole command line) ask for the child.
pub fn wanted(args: &[std::ffi::OsString]) -> bool {
    args.get(1).is_some_and(|a| a == SUBCOMMAND)
}

/// The child: runs with the command line `args` (program name first) and
/// returns its exit status.
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let args: Vec<String> = args.iter().skip(2).map(|a| a.to_string_lossy().into_owned()).collect();
    let (family, wait) = match parse_args(&args) {
        Ok(parsed) => parsed,
        Err(problem) => {
            eprintln!("{SUBCOMMAND}: {problem}");
            return EXIT_USAGE;
        }
    };
    match lock::hold_blocking(None, wait) {
        Ok(Some(held)) => {
            let status = run(family, std::io::stdin().lock());
            drop(held);
            status
        }
        Ok(None) => {
            eprintln!("Another app is currently holding the xtables lock ({}); waited {}s", lock::path(None), wait.as_secs());
            EXIT_LOCKED
        }
        Err(err) => {
            eprintln!("{SUBCOMMAND}: xtables lock {}: {err}", lock::path(None));
            EXIT_DECLINED
        }
    }
}

fn parse_args(args: &[String]) -> Result<(Family, Duration), String> {
    let (mut family, mut wait) = (None, 0u64);
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "--family" => {
                family = Some(match words.next().map(String::as_str) {
                    Some("ipv4") => Family::V4,
                    Some("ipv6") => Family::V6,
                    other => return Err(format!("--family {other:?}: ipv4 or ipv6")),
                })
            }
            w if w.starts_with("--wait=") => wait = w["--wait=".len()..].parse().map_err(|_| format!("{w}: seconds"))?,
            w => return Err(format!("unknown argument {w:?}")),
        }
    }
    Ok((family.ok_or("--family is required")?, Duration::from_secs(wait)))
}

/// Applies the restore input read from `input`; the exit status.
fn run(family: Family, input: impl BufRead) -> i32 {
    let mut restore = match Restore::new(family) {
        Ok(restore) => restore,
        Err(err) => {
            eprintln!("{SUBCOMMAND}: raw socket: {err}");
            return EXIT_DECLINED;
        }
    };
    let (mut input, mut line) = (input, String::new());
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) => {
                eprintln!("{SUBCOMMAND}: reading the input: {err}");
                return EXIT_DECLINED;
            }
        }
        if let Err(problem) = restore.line(&line) {
            eprintln!("{problem}");
            return EXIT_DECLINED;
        }
    }
    match restore.commit() {
        Ok(_) => 0,
        Err(CommitError::Input(problem)) => {
            eprintln!("{problem}");
            EXIT_DECLINED
        }
        Err(CommitError::Refused(refused)) => {
            eprintln!("{SUBCOMMAND}: line {} failed", refused.line);
            eprintln!("{SUBCOMMAND}: the kernel refused table {}: {}", refused.table, refused.error);
            EXIT_REFUSED
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_round_trip() {
        let args = args(Family::V6, 5);
        assert_eq!(args, ["xtables-restore", "--family", "ipv6", "--wait=5"]);
        assert_eq!(parse_args(&args[1..]), Ok((Family::V6, Duration::from_secs(5))));
        assert!(parse_args(&["--family".into(), "ipx".into()]).is_err());
        assert!(parse_args(&["--wait=5".into()]).is_err());
        let whole: Vec<std::ffi::OsString> = ["kube-proxy-rs", "xtables-restore"].map(Into::into).into();
        assert!(wanted(&whole) && !wanted(&whole[..1]));
    }
}

//! Ctrl-C / SIGTERM while a benchmark runs: kill the proxy we started and
//! delete the network namespace we made, then exit. The normal paths clean
//! up through `Drop`; this covers the signal, which skips destructors.

use std::process::Command;
use std::sync::{Mutex, PoisonError};

/// What must go if the benchmark is interrupted now.
#[derive(Default)]
struct Pending {
    netns: Vec<String>,
    child: Option<u32>,
}

static PENDING: Mutex<Pending> = Mutex::new(Pending {
    netns: Vec::new(),
    child: None,
});

fn with_pending<T>(f: impl FnOnce(&mut Pending) -> T) -> T {
    f(&mut PENDING.lock().unwrap_or_else(PoisonError::into_inner))
}

/// Starts a thread that waits for SIGINT or SIGTERM and then cleans up and
/// exits with 130. Signal handlers do not survive `exec`, so the proxy we
/// start keeps the default disposition.
pub fn install() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    std::thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || runtime.block_on(wait_then_clean_up()))?;
    Ok(())
}

async fn wait_then_clean_up() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        eprintln!(
            "kprs-bench: cannot watch for Ctrl-C; an interrupted run may leave its namespace behind"
        );
        return;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
    eprintln!("kprs-bench: interrupted; stopping the proxy and deleting the namespace");
    clean_up_now();
    std::process::exit(130);
}

fn clean_up_now() {
    let pending = with_pending(std::mem::take);
    if let Some(pid) = pending.child {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    for name in pending.netns {
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
    }
}

/// Remembers a namespace to delete on interrupt.
pub fn track_netns(name: &str) {
    with_pending(|p| p.netns.push(name.to_string()));
}

/// Forgets a namespace that was deleted the normal way.
pub fn forget_netns(name: &str) {
    with_pending(|p| p.netns.retain(|n| n != name));
}

/// Remembers the proxy process to kill on interrupt (`None`: it has exited).
pub fn track_child(pid: Option<u32>) {
    with_pending(|p| p.child = pid);
}

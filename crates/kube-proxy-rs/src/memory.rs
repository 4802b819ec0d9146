//! How the process uses glibc's malloc. By default glibc gives each thread
//! that allocates concurrently its own arena (up to 8 per core) and keeps
//! freed memory in them, so the transient peaks of reading the manifests
//! and of syncs (tens of MiB at 10,000 services) stay resident, once per
//! arena. Two arenas and handing freed memory back after each big piece
//! of work keep RSS near the live heap. Other C libraries: nothing to do.

#![allow(unsafe_code)]

/// Arenas malloc may use: one for the main thread, one shared by the
/// runtime's workers and blocking threads.
#[cfg(target_env = "gnu")]
const ARENA_MAX: libc::c_int = 2;

/// Limits malloc's arenas. Call first thing in `main`, before any thread
/// starts.
pub fn tune() {
    if std::env::var_os("KPRS_MALLOC_DEFAULT").is_some() { return; } // EXPERIMENT
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes malloc's parameters; no thread runs yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENA_MAX);
    }
}

/// Hands memory freed since the last call back to the kernel. Call after
/// big transient work: a manifests read ingested, a full sync.
pub fn release_freed() {
    if std::env::var_os("KPRS_NO_TRIM").is_some() { return; } // EXPERIMENT
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free pages; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

//! How the process uses glibc's malloc. By default glibc serves buffers
//! of up to 32 MiB from its heaps once one such buffer has been freed
//! (the mmap threshold adapts upwards), and keeps freed memory there, so
//! the transient peaks of reading the manifests and of syncs (the file's
//! text, the restore text, tens of MiB at 10,000 services) stay resident
//! and fragment the heap: peak RSS creeps up with every re-read. Buffers
//! of 1 MiB and more are therefore always mapped on their own (returned
//! to the kernel when freed), and the rest of what big work frees is
//! handed back after it. Measured at 10,000 services, six re-reads each
//! followed by a render: peak 196 → 157 MiB, settled RSS 163 → 58 MiB.
//! glibc also gives each thread that allocates an arena of its own (up to
//! eight per core); a sync runs on whichever runtime thread is free, the
//! manifests are decoded on a blocking thread and big states are freed
//! on a helper thread, so memory one arena freed could not serve the
//! next sync elsewhere: two arenas (stop 22: in nftables mode at 10,000
//! × 10 through a cold start, two changes and two periodic full syncs,
//! peak 54.6–57.3 → 54.5–54.7 MiB; one arena: 52.9–54.3 MiB, but the full
//! sync 30 ms slower, threads waiting on the arena's lock). Four since the
//! manifests are read on two threads of their own beside the runtime's
//! (`source`'s `pipeline.rs`; `kprs-bench run`/`nftables-curve`, stop 38):
//! at 100,000 × 1 peak RSS 136.4–136.8 MiB against 139.1–139.3 with two,
//! at 10,000 × 10 (the run above) 48.4–49.0 against 47.2–47.6, the cold
//! start as fast within the noise. Other C libraries: nothing to do.

#![allow(unsafe_code)]

/// Allocations at least this large get their own mapping.
#[cfg(target_env = "gnu")]
const MMAP_THRESHOLD: libc::c_int = 1 << 20;

/// Arenas for all threads.
#[cfg(target_env = "gnu")]
const ARENAS: libc::c_int = 4;

/// Fixes malloc's mmap threshold and number of arenas. Call first thing
/// in `main`, before any thread starts.
pub fn tune() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes malloc's parameters; no thread runs yet.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
    }
}

/// Hands memory freed since the last call back to the kernel (from every
/// arena). Call after big transient work: a manifests read ingested, a
/// full sync.
pub fn release_freed() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free pages; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

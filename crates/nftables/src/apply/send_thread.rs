//! A cold start's parts sent by a thread of their own while the next part
//! is built: the kernel runs each transaction inside `sendmsg`, so with
//! one thread our rendering and encoding wait for the kernel and the
//! kernel for them. At 10,000 services × 10 endpoints the kernel's part
//! is some 0.8 s and ours some 0.4 s; side by side on two cores the
//! cold start costs about the kernel's.
//!
//! Parts are encoded by the building thread and handed over one at a
//! time (a rendezvous channel): at most the part being sent and the one
//! being built are held. They are sent in order, and the first refused
//! part stops the rest: the sending thread returns, and the builder's
//! next hand-over fails.

use super::syncer::drop_later;
use crate::{Batch, Error, NftSocket, Transaction};
use std::io;
use std::sync::mpsc::{Receiver, sync_channel};
use std::time::Duration;

/// Runs `build`, whose every part goes to `socket` from another thread
/// as soon as the previous one is applied. Returns the kernel's time in
/// the parts' transactions; the first error of either side (the
/// sender's first: it is why the builder stopped).
pub(crate) fn send_while_building(
    socket: &mut NftSocket,
    build: impl FnOnce(&mut dyn FnMut(Transaction) -> Result<(), Error>) -> Result<(), Error>,
) -> Result<Duration, Error> {
    let mut seq = socket.reserve_seq();
    let sent = std::thread::scope(|scope| {
        let (parts, received) = sync_channel::<(Transaction, Batch)>(0);
        let sender = std::thread::Builder::new()
            .name("nft-send".into())
            .spawn_scoped(scope, || send_all(&mut *socket, received))
            .map_err(|source| Error::Send {
                operation: "start the thread that sends a cold start's parts".into(),
                source,
            })?;
        let built = build(&mut |part| {
            let batch = seq.encode(&part);
            parts.send((part, batch)).map_err(|_| Error::Send {
                operation: "hand a part of a cold start to its sending thread".into(),
                source: io::Error::other("the sending thread stopped"),
            })
        });
        drop(parts);
        let sent = sender
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let kernel = sent?;
        built.map(|()| kernel)
    });
    socket.end_reservation(seq);
    sent
}

/// Applies each part received, in order, until the first error.
fn send_all(
    socket: &mut NftSocket,
    parts: Receiver<(Transaction, Batch)>,
) -> Result<Duration, Error> {
    let mut kernel = Duration::ZERO;
    for (part, batch) in parts {
        let applied = socket.apply_encoded(&part, &batch);
        kernel += socket.last_kernel_time();
        drop_later((part, batch));
        applied?;
    }
    Ok(kernel)
}

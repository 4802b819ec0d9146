//! Two stages of a read on two threads. A large file's read is CPU work
//! in two halves (cutting and hashing the documents, then checking each;
//! decoding each, then feeding its objects to the tracker), and the
//! node's other cores are idle meanwhile: at 100,000 services × 1
//! endpoint each half is some hundreds of milliseconds. Items pass in
//! small batches through a short queue, so what waits between the two
//! stages stays small. What the second stage is done with can go back to
//! be dropped on the first stage's thread, which allocated it: glibc's
//! malloc frees a block of another thread's arena under that arena's
//! lock, against the thread allocating from it.

use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

/// Items handed to the second stage at once.
const BATCH: usize = 64;

/// Batches waiting for the second stage, at most.
const QUEUE: usize = 4;

/// Where the first stage gives its items (and gets back, to drop, what
/// the second stage is done with).
pub(super) struct Give<T, S = ()> {
    send: SyncSender<Vec<T>>,
    batch: Vec<T>,
    spent: Receiver<Vec<S>>,
}

impl<T, S> Give<T, S> {
    /// Hands `item` on (in a batch).
    pub(super) fn give(&mut self, item: T) {
        self.batch.push(item);
        if self.batch.len() >= BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        // dropped here, on the thread that made them
        self.spent.try_iter().for_each(drop);
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        // fails only when the second stage has panicked: the scope then
        // resumes that panic once this stage ends
        let _ = self.send.send(batch);
    }
}

/// Runs `first` on a new thread and `second` on this one with each item
/// `first` gives, in the order given; returns what `first` returned. A
/// panic of either stage is resumed here.
pub(super) fn two_stages<T: Send, A: Send>(
    first: impl FnOnce(&mut Give<T>) -> A + Send,
    mut second: impl FnMut(T),
) -> A {
    two_stages_giving_back(first, |item, _: &mut Vec<()>| second(item))
}

/// [`two_stages`], where `second` also puts what it is done with in the
/// vector it is given, to be dropped on the first stage's thread.
pub(super) fn two_stages_giving_back<T: Send, S: Send, A: Send>(
    first: impl FnOnce(&mut Give<T, S>) -> A + Send,
    mut second: impl FnMut(T, &mut Vec<S>),
) -> A {
    let (send, receive) = sync_channel(QUEUE);
    let (give_back, spent): (Sender<Vec<S>>, _) = channel();
    std::thread::scope(|scope| {
        let running = std::thread::Builder::new()
            .name("manifests-read".into())
            .spawn_scoped(scope, move || {
                let mut give = Give {
                    send,
                    batch: Vec::with_capacity(BATCH),
                    spent,
                };
                let out = first(&mut give);
                give.flush();
                out
            });
        let running = match running {
            Ok(running) => running,
            Err(err) => panic!("cannot start a thread to read the manifests: {err}"),
        };
        for batch in receive {
            let mut done = Vec::new();
            batch.into_iter().for_each(|item| second(item, &mut done));
            if !done.is_empty() {
                // fails once the first stage has ended: dropped here
                let _ = give_back.send(done);
            }
        }
        running.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_item_reaches_the_second_stage_in_order() {
        let mut seen = Vec::new();
        let given = two_stages(
            |give| {
                (0..1000).for_each(|i| give.give(i));
                1000
            },
            |i| seen.push(i),
        );
        assert_eq!(given, 1000);
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_panic_of_the_first_stage_reaches_the_caller() {
        let caught = std::panic::catch_unwind(|| {
            two_stages(|give: &mut Give<u8>| -> u8 { give.give(1); panic!("first") }, |_| {})
        });
        assert!(caught.is_err());
    }
}

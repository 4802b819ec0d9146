//! What a source tells its owner about the tracker it feeds.

/// Delivered by the `on_event` callback of [`crate::kube::run`] and
/// [`crate::manifests::run`], from the source's task; the callback must not
/// block (asking the runner for a sync is the intended use).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceEvent {
    /// The tracker now holds a whole state and the first sync may run:
    /// Services and EndpointSlices have both been listed completely once,
    /// or the manifests file has been read once. Sent exactly once. (The
    /// Node is not waited for, as upstream's proxier does not wait for it
    /// either.)
    InitialListDone,
    /// The tracker was left with changes not yet synced. Sent after each
    /// such add, update or delete, and once at the end of a re-list or a
    /// re-read of the file (not per object). Repeats are harmless: treat
    /// it as "a sync is wanted".
    Changed,
}

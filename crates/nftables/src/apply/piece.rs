//! What a full sync in pieces takes after the skeleton
//! ([`super::Syncer::sync_full_in_pieces`]): chains with their rules, and
//! the elements of named sets the skeleton declares without them (the
//! shared endpoint maps, rendered map by map, and the other shared sets,
//! in parts: never held all at once).

use super::state::{ChainState, TableState};
use crate::{Element, TableContents};

/// One piece of a table given in pieces.
#[derive(Debug)]
pub(crate) enum Piece {
    /// A chain of the skeleton with its rules (normalized).
    Chain(ChainState),
    /// Every element of named set `set`, which the skeleton declares
    /// without an entry in its elements, or some of them for a set given
    /// in parts ([`super::state::SetState::in_parts`]).
    Elements { set: String, elements: Vec<Element> },
}

impl Piece {
    /// The pieces `contents` holds: the elements it gives for named sets
    /// it does not declare, then its chains with their rules.
    pub(crate) fn all_of(mut contents: TableContents) -> Vec<Piece> {
        let declared: Vec<String> = contents.sets.iter().map(TableContents::set_key).collect();
        let mut pieces: Vec<Piece> = Vec::new();
        contents.elements.retain(|set, elements| {
            if declared.contains(set) {
                return true;
            }
            let elements = std::mem::take(elements);
            pieces.push(Piece::Elements {
                set: set.clone(),
                elements,
            });
            false
        });
        pieces.extend(
            TableState::new(contents)
                .chains
                .into_iter()
                .map(Piece::Chain),
        );
        pieces
    }
}

/// The named sets of `skeleton` without an entry in its elements: their
/// elements come in pieces of their own.
pub(crate) fn streamed_sets(skeleton: &TableContents) -> Vec<String> {
    skeleton
        .sets
        .iter()
        .filter(|s| !skeleton.elements.contains_key(&TableContents::set_key(s)))
        .map(|s| s.name.clone())
        .collect()
}

//! Unit tests of the renderer, one per traffic kind.

//! TODO: health

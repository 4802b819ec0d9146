//! TODO: source

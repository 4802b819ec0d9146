//! TODO: runner

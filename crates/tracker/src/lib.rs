//! TODO: tracker

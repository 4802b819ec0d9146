//! The binary's readers of outside text — the command line ([`flags`]), Go
//! durations ([`duration`]) and the config file ([`config`]) — as a library
//! root, for the fuzz targets in `fuzz/` only (their `Cargo.toml` names this
//! file as their library). The binary does not compile this file: `main.rs`
//! declares the same modules.

#![allow(dead_code, missing_docs)]

pub mod config;
pub mod duration;
pub mod flags;

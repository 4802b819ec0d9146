//! Tiny TCP/UDP echo servers that answer with their name and the peer they saw.

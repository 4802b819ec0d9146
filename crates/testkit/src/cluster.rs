//! A simulated cluster of network namespaces for end-to-end tests.

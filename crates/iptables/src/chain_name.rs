//! Chain names: upstream's hashes of service port names and endpoints.

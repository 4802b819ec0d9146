//! TODO: ipvs

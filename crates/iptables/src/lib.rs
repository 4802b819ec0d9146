//! TODO: iptables

//! A packet tracer: walks a packet through rendered iptables rules.

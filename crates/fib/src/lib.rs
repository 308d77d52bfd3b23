//! IPv4 forwarding information base: longest-prefix match, next hops, ECMP.
#![forbid(unsafe_code)]

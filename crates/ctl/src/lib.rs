//! Control plane of the router: the configuration file ([`config`]) and the daemon
//! ([`daemon`]) behind the `dataplaned` binary, and the routing part of the
//! configuration ([`routing`]).

pub mod config;
pub mod daemon;
pub mod routing;

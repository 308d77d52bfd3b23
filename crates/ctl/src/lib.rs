//! Control plane of the router: the configuration file ([`config`]) and the daemon
//! ([`daemon`]) behind the `dataplaned` binary.

pub mod config;
pub mod daemon;

//! Control plane of the router: the configuration file ([`config`], [`routing`]),
//! the daemon behind `dataplaned` ([`daemon`]) with its control socket ([`server`],
//! [`api`]), and the `dpctl` command language, protocol and output ([`cli`],
//! [`proto`], [`render`]).

pub mod api;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod decode;
pub mod linux;
pub mod proto;
pub mod render;
pub mod routing;
pub mod server;
pub mod sflow_agent;
pub mod spec;

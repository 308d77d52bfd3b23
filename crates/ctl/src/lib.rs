//! Control plane of the router: the configuration file ([`config`], [`routing`]),
//! the daemon behind `dataplaned` ([`daemon`]) with its control socket ([`server`],
//! [`api`]), the Linux control plane ([`linux`]: TAP twins, netlink learner), and
//! the resolution of operators' routes and labels ([`spec`]). The `dpctl`
//! command language, protocol and output live in the `dpctl` crate (no DPDK),
//! re-exported here as [`cli`], [`proto`] and [`render`].
#![deny(unsafe_code)]

pub mod api;
pub mod config;
pub mod daemon;
pub mod decode;
pub mod error;
pub mod linux;
pub mod log;
pub mod metrics;
pub mod notify;
pub mod ports;
pub mod routing;
pub mod server;
pub mod sflow_agent;
pub mod spec;

pub use dpctl::{cli, proto, render};

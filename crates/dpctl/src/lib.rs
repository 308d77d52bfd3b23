//! The `dpctl` command language, apart from the daemon and DPDK: the grammar
//! ([`cli`]), routes and label entries as operators write them ([`spec`],
//! [`parse`]), the request protocol over the control socket ([`proto`]) and the
//! text rendering of results ([`render`]); man pages and completions
//! ([`manual`]). `dataplaned` runs what it parses; the
//! `dpctl` binary needs nothing else.
#![forbid(unsafe_code)]

pub mod cli;
pub mod manual;
pub mod parse;
pub mod proto;
pub mod render;
pub mod spec;

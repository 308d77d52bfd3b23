//! The dataplane: a safe layer over DPDK ([`dpdk`]) and the run-to-completion workers
//! that poll ports and forward vectors of up to [`dpdk::BURST`] packets.
//!
//! Only [`dpdk`] uses `unsafe` (the crate denies it elsewhere); everything else is
//! safe Rust over its types.
#![deny(unsafe_code)]

pub mod counters;
#[allow(unsafe_code)] // the safe layer over DPDK's C API
pub mod dpdk;
pub mod packet;
pub mod router;
pub mod xconnect;

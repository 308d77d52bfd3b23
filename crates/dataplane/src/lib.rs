//! The dataplane: a safe layer over DPDK ([`dpdk`]) and the run-to-completion workers
//! that poll ports and forward vectors of up to [`dpdk::BURST`] packets.
//!
//! Only [`dpdk`] uses `unsafe`; everything else is safe Rust over its types.

pub mod counters;
pub mod dpdk;
pub mod packet;
pub mod router;
pub mod xconnect;

//! The safe layer over `dpdk-sys`: the only module of the dataplane that uses
//! `unsafe`. Every unsafe block says why it is sound.
//!
//! Ownership rules the types enforce:
//! - an [`Mbuf`] owns one packet buffer; dropping it frees it, handing it to
//!   [`Burst::tx_burst`] or [`Ring::enqueue_burst`] moves the ownership to DPDK;
//! - a [`Burst`] owns up to [`BURST`] mbufs and frees whatever it still holds on drop;
//! - a [`Port`] is stopped and closed on drop; a [`Mempool`] is freed only when no
//!   mbuf of it is outstanding.

mod eal;
mod error;
mod mbuf;
mod mempool;
pub mod peers;
mod port;
mod ring;

pub use eal::{
    Eal, EalConfig, MemoryMode, ppoll, precise_sleeps, prefetch0, prefetchw, tsc, tsc_hz,
};
pub use error::DpdkError;
pub use mbuf::{BURST, Burst, Mbuf};
pub use mempool::Mempool;
pub use port::{LinkStatus, Port, PortConfig, PortStats, kernel_iface_of, packet_socket_fds};
pub use ring::Ring;

use std::ffi::CStr;

/// The text of a DPDK error number (`rte_strerror`).
pub(crate) fn strerror(errno: i32) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or thread-local NUL-terminated
    // string for any errno value; we copy it out immediately.
    unsafe { CStr::from_ptr(dpdk_sys::rte_strerror(errno)) }
        .to_string_lossy()
        .into_owned()
}

/// The calling thread's `rte_errno`.
pub(crate) fn rte_errno() -> i32 {
    // SAFETY: reads a thread-local integer; no preconditions.
    unsafe { dpdk_sys::shim_rte_errno() }
}

/// Turns a negative DPDK return code (`-errno`) into an error naming the call.
pub(crate) fn check(ret: i32, what: impl FnOnce() -> String) -> Result<i32, DpdkError> {
    if ret < 0 {
        Err(DpdkError::Call {
            what: what(),
            reason: strerror(-ret),
        })
    } else {
        Ok(ret)
    }
}

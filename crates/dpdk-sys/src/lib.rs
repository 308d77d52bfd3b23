//! Raw FFI to the system's DPDK (Debian's 22.11), generated at build time by bindgen
//! from the headers `pkg-config libdpdk` names, plus `shim_*` wrappers (csrc/shim.c)
//! for DPDK's static-inline fast-path functions (rx/tx burst, mbuf alloc/free/adj,
//! `rte_errno`, TSC, `rte_lpm` lookups).
//!
//! Nothing here is safe to call without reading DPDK's documentation; the safe layer
//! is `dataplane::dpdk`.
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code,
    missing_docs,
    unreachable_pub,
    improper_ctypes,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    rust_2018_idioms,
    unsafe_op_in_unsafe_fn
)]

include!(concat!(env!("OUT_DIR"), "/dpdk_sys.rs"));

// The layouts the safe layer relies on (bindgen's own layout tests check the rest).
const _: () = assert!(core::mem::size_of::<rte_mbuf>() == 128);
const _: () = assert!(core::mem::align_of::<rte_mbuf>() == 64);

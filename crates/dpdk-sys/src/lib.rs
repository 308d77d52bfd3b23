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

/// RSS hash-function bits (`RTE_ETH_RSS_*`): macros built on `RTE_BIT64`, which bindgen
/// does not evaluate, so they are restated here from rte_ethdev.h (22.11).
pub mod rss {
    /// IPv4 header.
    pub const IPV4: u64 = 1 << 2;
    /// Fragmented IPv4.
    pub const FRAG_IPV4: u64 = 1 << 3;
    /// IPv4 + TCP ports.
    pub const NONFRAG_IPV4_TCP: u64 = 1 << 4;
    /// IPv4 + UDP ports.
    pub const NONFRAG_IPV4_UDP: u64 = 1 << 5;
    /// Other IPv4.
    pub const NONFRAG_IPV4_OTHER: u64 = 1 << 7;
    /// IPv6 header.
    pub const IPV6: u64 = 1 << 8;
    /// Fragmented IPv6.
    pub const FRAG_IPV6: u64 = 1 << 9;
    /// IPv6 + TCP ports.
    pub const NONFRAG_IPV6_TCP: u64 = 1 << 10;
    /// IPv6 + UDP ports.
    pub const NONFRAG_IPV6_UDP: u64 = 1 << 11;
    /// Other IPv6.
    pub const NONFRAG_IPV6_OTHER: u64 = 1 << 13;
    /// IPv6 with extension headers.
    pub const IPV6_EX: u64 = 1 << 15;
    /// MPLS label stack.
    pub const MPLS: u64 = 1 << 33;
    /// `RTE_ETH_RSS_IP`.
    pub const IP: u64 =
        IPV4 | FRAG_IPV4 | NONFRAG_IPV4_OTHER | IPV6 | FRAG_IPV6 | NONFRAG_IPV6_OTHER | IPV6_EX;
    /// `RTE_ETH_RSS_UDP` (without the IPv6 extension variant).
    pub const UDP: u64 = NONFRAG_IPV4_UDP | NONFRAG_IPV6_UDP;
    /// `RTE_ETH_RSS_TCP` (without the IPv6 extension variant).
    pub const TCP: u64 = NONFRAG_IPV4_TCP | NONFRAG_IPV6_TCP;
}

/// Receive offload bits (`RTE_ETH_RX_OFFLOAD_*`, `RTE_BIT64` macros in rte_ethdev.h,
/// 22.11).
pub mod rx_offload {
    /// The device checks IPv4 header checksums and says so in each mbuf's `ol_flags`.
    pub const IPV4_CKSUM: u64 = 1 << 1;
}

/// mbuf `ol_flags` bits (`RTE_MBUF_F_*` in rte_mbuf_core.h, 22.11).
pub mod mbuf_flags {
    /// The IPv4 header checksum is wrong.
    pub const RX_IP_CKSUM_BAD: u64 = 1 << 4;
    /// The IPv4 header checksum is right.
    pub const RX_IP_CKSUM_GOOD: u64 = 1 << 7;
    /// Both bits: `RX_IP_CKSUM_NONE` (the header's integrity was verified, its
    /// checksum field is not to be trusted); neither: unknown.
    pub const RX_IP_CKSUM_MASK: u64 = RX_IP_CKSUM_BAD | RX_IP_CKSUM_GOOD;
}

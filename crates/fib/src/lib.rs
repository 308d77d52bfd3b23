//! IPv4 and IPv6 forwarding information base: longest-prefix match, path lists, ECMP,
//! recursive resolution and adjacencies, read lock-free by the workers.
//!
//! # Use
//!
//! The control thread owns the one [`Fib`] (the writer, `&mut self`); each worker
//! holds a [`FibReader`] (`Send`, cheap to clone):
//!
//! ```
//! use fib::{Action, Fib, Interface, Path, RouteKind};
//! use std::net::{IpAddr, Ipv4Addr};
//!
//! let mut fib = Fib::new(); // table 0 exists
//! fib.interface_set(1, Interface { mac: [2, 0, 0, 0, 0, 1], mtu: 1500, vlan: None });
//! fib.route_add(0, "10.0.0.0/24".parse()?, RouteKind::Connected { ifindex: 1 })?;
//! let gw = Ipv4Addr::new(10, 0, 0, 1);
//! fib.route_add(0, "0.0.0.0/0".parse()?, RouteKind::Paths(vec![Path::gateway(gw).with_labels(&[100])]))?;
//! fib.neighbor_set(1, IpAddr::V4(gw), Some([0x52, 0x54, 0, 0, 0, 1]))?; // from ARP or netlink
//!
//! let mut reader = fib.reader(); // move to a worker thread
//! // Per burst: one read section, a batched lookup, then per packet one bucket pick.
//! let view = reader.read();
//! let dst = [u32::from(Ipv4Addr::new(8, 8, 8, 8)); 4];
//! let mut ids = [0u32; 4];
//! view.lookup_burst(0, &dst, &mut ids);
//! let leg = view.leg(ids[0], 0x1234 /* flow hash */);
//! assert_eq!(leg.action(), Action::Forward);
//! let adj = view.adjacency(leg.target()).unwrap();
//! assert!(adj.complete);
//! let mut labels = [0u32; fib::MAX_LABELS];
//! assert_eq!(leg.labels_into(&mut labels), 1);
//! drop(view); // quiescent point
//! # Ok::<(), fib::FibError>(())
//! ```
//!
//! A lookup returns a 32-bit *result id* (0 = no route). From it, [`FibView::leg`]
//! makes the ECMP pick with one bucket index (`hash & (buckets - 1)`) and yields the
//! [`Action`] (forward / drop / unreachable / prohibit / local / glean / no route),
//! the adjacency id and the out-label stack; [`FibView::adjacency`] gives the L2
//! rewrite (dst/src MAC, VLAN, MTU) or "incomplete" (needs ARP/ND).
//!
//! # Lookup structure, and why
//!
//! A Poptrie (Asai & Ohara, SIGCOMM 2015): an 18-bit direct array, then 6-bit-stride
//! nodes that find a child or a leaf with one `popcnt`, runs of equal leaves merged.
//! Two additions: a region (/18) with nothing longer than /24 — most of them in a real
//! table — is a single leaf-only node pointed at by the direct entry (one dependent
//! load fewer), and a region with routes longer than /24 (few in a real table, but
//! every interface address makes one) has an uncompressed block of 64 entries for bits
//! 18..24, each a result id or the node at /24, so its prefixes up to /24 take two
//! dependent loads and no `popcnt`. The full 2014 table (512,621 prefixes, 29,959 next
//! hops) takes 6 MiB of LPM arrays (capacity; the direct array is 1 MiB), so lookups
//! run out of L2/L3, where DIR-24-8 (`rte_lpm`, `rte_fib`) has a 64 MiB `tbl24` that
//! random keys take to DRAM.
//!
//! The direct bits were chosen by measurement on this project's 2-core AMD EPYC guest
//! (shared and noisy; ranges over repeated runs), 2^22 keys in batches of 256, with
//! every stride compressed:
//!
//! | structure | memory | random keys | keys drawn from prefixes |
//! |---|---:|---:|---:|
//! | Poptrie, direct 16 bits | 10.3 MiB | 80-140 M/s | 27-32 M/s |
//! | Poptrie, direct 18 bits (chosen) | 3.5 MiB | 170-210 M/s | 83-92 M/s |
//! | Poptrie, direct 20 bits | 9.0 MiB | 95-180 M/s | 50-67 M/s |
//! | DIR-24-8 in safe Rust (4 KiB pages) | 66 MiB | 107-125 M/s | 140-190 M/s |
//!
//! Same-run comparison: `cargo bench -p benches --bench lpm`, full table, figures and
//! their dates in `benches/RESULTS-fib.md`. Blocks for every region that holds
//! anything longer than /18 (21 MiB for the full table) were tried: the same within
//! the noise warm, slower when the other stages evict the arrays (more pages and
//! lines to miss), so only regions with nodes get one.
//!
//! **Build with hardware `popcnt`.** The x86-64 baseline target has none, so
//! `count_ones` — the Poptrie's core step — is emulated in about a dozen instructions:
//! 42 instructions per lookup against 21 with `-C target-cpu=x86-64-v2` (cachegrind,
//! keys drawn from prefixes). With that flag the same bench gives 1.66x `rte_lpm` on
//! random keys and 1.48x on keys drawn from prefixes (170 M/s), warm, batch 256. DPDK
//! requires SSE4.2 (x86-64-v2) anyway. The `popcnt` intrinsic itself cannot be called
//! here: it is a `#[target_feature]` function, `unsafe` to call from code compiled
//! without the feature, and this crate denies `unsafe` outside `lpm6/simd.rs`.
//!
//! The batched lookup makes two passes: one reads the direct entry of every key of the
//! burst, the next takes every key to its leaf or block entry (the answer for
//! prefixes up to /24; the deeper walk goes on out of line). The first pass's loads are independent, so the core
//! overlaps their cache misses — what software prefetch does in `rte_lpm`/VPP.
//! (`_mm_prefetch` is an `unsafe` call in Rust 1.95 outside a `#[target_feature]`
//! function; only the IPv6 lookup's SIMD module may make it.)
//!
//! # Concurrency
//!
//! Everything a reader touches lives in atomic arrays inside one `Planes` snapshot,
//! published through `arc_swap`; a reader checks for a new snapshot once per
//! [`FibReader::read`] (one atomic load). The shape of a published node is never
//! modified and a lookup reads exactly one block entry or leaf. A route longer than
//! /18 is patched into its region: the block entries or leaves under it get their new
//! result ids in place (one release store each), or the region gets a new leaf-only
//! node, or a node at /24 a new copy, swung in with one release store; other changes rebuild the
//! region under each affected 18-bit direct entry into free space and swing the entry. ECMP buckets and adjacency
//! pointers are single atomic words. So every answer is the answer of some moment.
//! Freed slots go through QSBR ([`FibReader::read`] announces the epoch, dropping the
//! [`FibView`] is the quiescent point) and are reused only after every reader passed
//! one. When an array must grow, the writer deep-copies the snapshot and publishes
//! the copy; the old one is frozen and freed by the writer once no reader holds it.
//! Readers never lock, allocate or wait; the writer never waits for readers.
//!
//! # Costs and limits
//!
//! Per table: 1 MiB direct array plus node and leaf arrays, and on the writer side a
//! 1 MiB covering-route cache, a binary trie and an exact-match index (about 58 MiB
//! for the full table, most of it the trie). A change of a route longer than /18 is
//! patched into its region (see Concurrency); a route of /18 or shorter rebuilds the
//! regions it covers whose best short route changes. Measured while a reader runs
//! (`benches/RESULTS-fib.md`): 1.4-1.9 µs of writer CPU per change with one
//! publication each (709 k changes/s when the writer had its core), 0.6-1.3 µs in
//! batches of 1,000 (1.7 M/s). Out-label stacks concatenate on recursion (outer labels
//! of the route resolved through first); implicit-null is not interpreted here.
//!
//! # Route model
//!
//! A route (per table, [`TableId`]) is a [`RouteKind`]: paths (IPv4 gateway,
//! IPv6 gateway per RFC 5549, or attached; weight; out-labels) or a special route
//! (blackhole, unreachable, prohibit, local, connected). Routes with equal paths in
//! one table share a *path list*, which owns the result id and its bucket table
//! (power of two, up to [`MAX_BUCKETS`], weights met within 1/16 of a share;
//! bucket reassignment keeps flows of unchanged paths in place). A gateway without
//! an interface resolves through the longest covering route (never through a route
//! that depends on itself); when that route changes, is deleted, or a more specific
//! one appears, only the dependent path lists are recomputed and their buckets
//! rewritten in place — the hierarchical FIB / BGP PIC idea: no prefix is touched.
//! Adjacencies are per (interface, neighbour), shared by all legs, refcounted;
//! [`Fib::neighbor_set`] flips every user at once.
//!
//! # IPv6
//!
//! Every table has an IPv6 half: [`Fib::route6_add`] / [`Fib::route6_del`] take
//! the same [`RouteKind`]s into the same path lists, results, legs and adjacencies
//! as IPv4's (a v4 and a v6 route with equal paths share one result), and
//! [`FibView::lookup6_burst`] looks up a burst of big-endian `u128` addresses.
//! Gateways resolve recursively by their own family, whatever the route's (an IPv4
//! route through an IPv6 next hop, RFC 5549; an IPv6 route through an IPv4 one,
//! 6PE); a link-local gateway needs its interface. An incomplete IPv6 adjacency
//! carries its neighbour's address ([`Adjacency::neighbor6`]) for solicitation.
//! The lookup is the [`Lpm6Table`]'s structure: a direct level of 16 bits, then
//! per /16 a B+-tree over the elementary intervals of the next 32 bits whose nodes
//! are two-level blocks (a root line of 15 keys picks one of up to 16 leaves by
//! position, a leaf's 15 keys pick its value: two SIMD compares and one value load
//! per block; longer routes in next-level trees under their /48), changed in place
//! at each commit (the lowest block a change touches copied with new leaves and
//! swung in with one release store; freed lines reused after the FIB's QSBR grace
//! period; grown arrays published with a new snapshot). On the 2024 table's
//! 160,147 IPv6 prefixes it takes 54 bytes per prefix (with its free room), loads
//! in about 50-80 ms, looks up 1.7-2x as fast as DPDK's `rte_fib6` at batch 256
//! (about as fast with cache-resident keys), and takes 0.5-0.6 M route changes/s
//! while a reader runs on a quiet machine (`benches/RESULTS-fib6.md`).
//! The crate's only `unsafe` is that lookup's block step (`lpm6/simd.rs`).
#![deny(unsafe_code)]

mod arena;
mod fib;
mod index;
mod lpm;
mod lpm6;
mod model;
mod prefix;
mod qsbr;
mod reader;
mod trie;

pub use arena::{FastHasher, FastMap, FastSet};
pub use fib::{Batch, Fib, MAX_BUCKETS, MAX_RESULTS, MemoryUsage};
pub use lpm::{DIRECT_BITS, UpdateStats};
pub use lpm6::{LPM6_DIRECT_BITS, LPM6_MAX_RESULT, Lpm6Reader, Lpm6Stats, Lpm6Table, Lpm6Trie};
pub use model::{
    Action, Adjacency, FibError, Interface, Ipv4Prefix, MAX_LABEL_VALUE, MAX_LABELS, MAX_PATHS,
    Path, RouteKind, TableId, Via,
};
pub use prefix::{Family, IpPrefix, Ipv6Prefix};
pub use reader::{FibReader, FibView, Leg, TableView};

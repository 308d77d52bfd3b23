//! Shared helpers for the criterion benchmarks.
//!
//! The machines this project is measured on have no PMU in the guest (`perf stat -e
//! cycles` is "not supported"), so per-packet cost is measured with the TSC, the way
//! DPDK's `rte_rdtsc()` and testpmd's `--record-core-cycles` do. [`cycles::Tsc`] is a
//! criterion [`Measurement`](criterion::measurement::Measurement) that reports TSC
//! cycles, so a bench with `Throughput::Elements(n)` prints cycles per packet.
#![deny(unsafe_code)]

pub mod cycles;
pub mod rib;

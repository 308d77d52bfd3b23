//! Shared helpers for the criterion benchmarks (TSC reading, inputs).

//! Safe DPDK layer and run-to-completion workers.

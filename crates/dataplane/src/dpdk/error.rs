//! Why the DPDK layer failed, in words an operator can act on.

use thiserror::Error;

/// Errors of the DPDK layer. The messages are meant for operators: they say what
/// failed and, where there is one, what to change.
#[derive(Debug, Error)]
pub enum DpdkError {
    /// `rte_eal_init` ran already in this process (DPDK allows one EAL per process).
    #[error("DPDK EAL is already initialised in this process")]
    AlreadyInitialized,
    /// `rte_eal_init` failed.
    #[error("DPDK EAL initialisation failed: {reason}{hint}")]
    EalInit {
        /// DPDK's error text.
        reason: String,
        /// What to do about it (may be empty).
        hint: String,
    },
    /// No free hugepages while the configuration demands them.
    #[error(
        "no free 2 MiB hugepages (need {needed}, {free} free): run scripts/setup.sh as root, or set memory = \"no-huge\" in [eal]"
    )]
    NoHugepages {
        /// Pages the configuration needs.
        needed: u64,
        /// Pages free now.
        free: u64,
    },
    /// A DPDK call failed.
    #[error("{what}: {reason}")]
    Call {
        /// The call and its object.
        what: String,
        /// DPDK's error text.
        reason: String,
    },
    /// An argument the layer refused before calling DPDK.
    #[error("{0}")]
    Invalid(String),
}

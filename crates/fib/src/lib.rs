//! IPv4 forwarding information base: longest-prefix match, next hops, ECMP.
#![forbid(unsafe_code)]

mod arena;
mod fib;
mod lpm;
mod model;
mod qsbr;
mod reader;
mod trie;

pub use fib::{Batch, Fib, MAX_BUCKETS, MemoryUsage};
pub use lpm::DIRECT_BITS;
pub use model::{
    Action, Adjacency, FibError, Interface, Ipv4Prefix, MAX_LABEL_VALUE, MAX_LABELS, MAX_PATHS,
    Path, RouteKind, TableId, Via,
};
pub use reader::{FibReader, FibView, Leg, TableView};

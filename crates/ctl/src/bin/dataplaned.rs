//! dataplaned: the router daemon.
fn main() {}

//! MPLS label table and label operations.
#![forbid(unsafe_code)]

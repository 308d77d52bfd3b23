//! Zero-copy views of the wire formats the dataplane speaks: Ethernet, 802.1Q, ARP,
//! IPv4, ICMP, MPLS label stack entries, and the Internet checksum.
#![forbid(unsafe_code)]
#![no_std]

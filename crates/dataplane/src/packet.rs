//! What the forwarding stages need from a packet buffer: the whole buffer with the
//! data window in it, so headers can be pushed into the headroom or popped by moving
//! the window. [`Mbuf`] is the real one; [`VecPacket`] is a plain heap buffer for
//! benchmarks and tests that run the stages without EAL.

use crate::dpdk::Mbuf;

/// The receiving NIC's verdict on a frame's IPv4 header checksum (its rx checksum
/// offload). Without the offload, or for a frame that is not plain IPv4, it is
/// [`RxCsum::Unknown`] and the router checks the sum itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RxCsum {
    /// Not checked: the router checks it.
    #[default]
    Unknown,
    /// Checked and right (or the header's integrity checked some other way).
    Good,
    /// Checked and wrong: the packet is dropped as `ip4_bad_checksum`.
    Bad,
}

/// A packet buffer with headroom.
pub trait Packet {
    /// The whole buffer (headroom, data, tailroom).
    fn raw_mut(&mut self) -> &mut [u8];
    /// Data start in the buffer and data length.
    fn window(&self) -> (usize, usize);
    /// Moves the data window; false (unchanged) when it does not fit.
    fn set_window(&mut self, start: usize, len: usize) -> bool;
    /// Shrinks the data window: drops its first `front` bytes and keeps `len`
    /// from there; false (unchanged) when they are not within it. Cheaper than
    /// [`Packet::set_window`]: a window inside the old one needs no check against
    /// the buffer.
    fn shrink_window(&mut self, front: usize, len: usize) -> bool;
    /// Grows the window by `n` bytes in front (as `rte_pktmbuf_prepend`); false
    /// (unchanged) when the headroom is shorter. Cheaper than
    /// [`Packet::set_window`]: the window's end stays, so it needs no check
    /// against the buffer's end.
    fn grow_front(&mut self, n: usize) -> bool;
    /// Drops the window's first `n` bytes (as `rte_pktmbuf_adj`); false
    /// (unchanged) when it is shorter.
    #[inline(always)]
    fn drop_front(&mut self, n: usize) -> bool {
        let len = self.window().1;
        len >= n && self.shrink_window(n, len - n)
    }
    /// The data window (the frame), writable: `raw_mut()[start..start + len]`
    /// for `(start, len) = window()` (an mbuf builds it without checking that
    /// again).
    #[inline(always)]
    fn data_mut(&mut self) -> &mut [u8] {
        let (start, len) = self.window();
        &mut self.raw_mut()[start..start + len]
    }
    /// Input port (DPDK port id).
    fn port(&self) -> u16;
    /// Hash from the NIC (RSS), 0 if none.
    fn rss_hash(&self) -> u32;
    /// Whether the packet is in one segment (multi-segment packets are dropped).
    fn is_contiguous(&self) -> bool;
    /// Whether the packet came in on `port` in one segment (what the fast path's
    /// classify runs take).
    #[inline(always)]
    fn whole_from(&self, port: u16) -> bool {
        self.port() == port && self.is_contiguous()
    }
    /// What the NIC found of the IPv4 header checksum of the frame as received
    /// (the header right behind the Ethernet or 802.1Q header; never one under
    /// labels).
    fn rx_ip4_csum(&self) -> RxCsum;
}

impl Packet for Mbuf {
    #[inline(always)]
    fn raw_mut(&mut self) -> &mut [u8] {
        Mbuf::raw_mut(self)
    }
    #[inline(always)]
    fn data_mut(&mut self) -> &mut [u8] {
        Mbuf::data_mut(self)
    }
    #[inline(always)]
    fn window(&self) -> (usize, usize) {
        Mbuf::window(self)
    }
    #[inline(always)]
    fn set_window(&mut self, start: usize, len: usize) -> bool {
        Mbuf::set_window(self, start, len)
    }
    #[inline(always)]
    fn shrink_window(&mut self, front: usize, len: usize) -> bool {
        Mbuf::shrink_window(self, front, len)
    }
    #[inline(always)]
    fn grow_front(&mut self, n: usize) -> bool {
        Mbuf::grow_front(self, n)
    }
    #[inline(always)]
    fn drop_front(&mut self, n: usize) -> bool {
        Mbuf::drop_front(self, n)
    }
    #[inline(always)]
    fn port(&self) -> u16 {
        Mbuf::port(self)
    }
    #[inline(always)]
    fn rss_hash(&self) -> u32 {
        Mbuf::rss_hash(self)
    }
    #[inline(always)]
    fn is_contiguous(&self) -> bool {
        Mbuf::is_contiguous(self)
    }
    #[inline(always)]
    fn whole_from(&self, port: u16) -> bool {
        Mbuf::whole_from(self, port)
    }
    #[inline(always)]
    fn rx_ip4_csum(&self) -> RxCsum {
        Mbuf::rx_ip4_csum(self)
    }
}

/// A heap packet buffer shaped like an mbuf (128 bytes of headroom, then 2048 of
/// data room).
#[derive(Debug, Clone)]
pub struct VecPacket {
    buf: Vec<u8>,
    start: usize,
    len: usize,
    port: u16,
    csum: RxCsum,
}

impl VecPacket {
    /// Headroom DPDK gives mbufs (RTE_PKTMBUF_HEADROOM).
    pub const HEADROOM: usize = 128;

    /// A packet holding `frame`, received on `port`.
    pub fn new(frame: &[u8], port: u16) -> Self {
        let cap = Self::HEADROOM + frame.len().max(2048);
        let mut buf = vec![0u8; cap];
        buf[Self::HEADROOM..Self::HEADROOM + frame.len()].copy_from_slice(frame);
        VecPacket {
            buf,
            start: Self::HEADROOM,
            len: frame.len(),
            port,
            csum: RxCsum::Unknown,
        }
    }

    /// The same packet as a NIC with rx checksum offload would hand it over,
    /// with verdict `csum` on its IPv4 header.
    pub fn with_rx_csum(mut self, csum: RxCsum) -> Self {
        self.csum = csum;
        self
    }

    /// Refills with `frame` (same buffer, same port), for benchmark loops.
    pub fn reset(&mut self, frame: &[u8]) {
        self.start = Self::HEADROOM;
        self.len = frame.len();
        self.buf[self.start..self.start + self.len].copy_from_slice(frame);
    }

    /// The data.
    pub fn data(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

impl Packet for VecPacket {
    #[inline(always)]
    fn raw_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
    #[inline(always)]
    fn window(&self) -> (usize, usize) {
        (self.start, self.len)
    }
    #[inline(always)]
    fn set_window(&mut self, start: usize, len: usize) -> bool {
        if start + len > self.buf.len() {
            return false;
        }
        self.start = start;
        self.len = len;
        true
    }
    #[inline(always)]
    fn shrink_window(&mut self, front: usize, len: usize) -> bool {
        if self.len.checked_sub(front).is_none_or(|rest| len > rest) {
            return false;
        }
        self.start += front;
        self.len = len;
        true
    }
    #[inline(always)]
    fn grow_front(&mut self, n: usize) -> bool {
        if self.start < n {
            return false;
        }
        self.start -= n;
        self.len += n;
        true
    }
    #[inline(always)]
    fn port(&self) -> u16 {
        self.port
    }
    #[inline(always)]
    fn rss_hash(&self) -> u32 {
        0
    }
    #[inline(always)]
    fn is_contiguous(&self) -> bool {
        true
    }
    #[inline(always)]
    fn rx_ip4_csum(&self) -> RxCsum {
        self.csum
    }
}

//! Packet buffers and bursts of them.

use std::mem::ManuallyDrop;
use std::ptr::{self, NonNull};

/// Packets per vector: the most a worker takes in one loop (VPP's frame size).
pub const BURST: usize = 256;

/// One packet buffer, owned. Dropping it returns it to its pool; passing it to a tx
/// or ring function hands it to DPDK. Single-segment access only: the dataplane's
/// pools hold a whole frame in one buffer, and multi-segment frames are refused by
/// [`Mbuf::is_contiguous`] checks where it matters.
#[repr(transparent)]
#[derive(Debug)]
pub struct Mbuf(NonNull<dpdk_sys::rte_mbuf>);

// SAFETY: an mbuf is owned by exactly one Mbuf value; moving it to another thread
// moves that ownership. Pools are thread-safe for the final free.
unsafe impl Send for Mbuf {}

impl Mbuf {
    /// Takes ownership of a raw mbuf.
    ///
    /// # Safety
    /// `m` must point to a valid mbuf that nothing else owns or will free.
    pub(crate) unsafe fn from_raw(m: NonNull<dpdk_sys::rte_mbuf>) -> Self {
        Mbuf(m)
    }

    /// Gives up ownership, returning the raw pointer.
    pub(crate) fn into_raw(self) -> *mut dpdk_sys::rte_mbuf {
        ManuallyDrop::new(self).0.as_ptr()
    }

    #[inline(always)]
    fn hdr(&self) -> &dpdk_sys::rte_mbuf {
        // SAFETY: we own a valid mbuf for as long as self lives.
        unsafe { self.0.as_ref() }
    }

    #[inline(always)]
    fn hdr_mut(&mut self) -> &mut dpdk_sys::rte_mbuf {
        // SAFETY: as above, and &mut self makes the access exclusive.
        unsafe { self.0.as_mut() }
    }

    /// Appends `tail` (one segment or more) as this packet's last segments, as
    /// `rte_pktmbuf_chain` does: `Err(tail)`, nothing changed, when the segment count
    /// or the packet length would not fit. (The dataplane's pools hold whole frames;
    /// chained packets come from PMDs that scatter, and the fast path and the stages
    /// refuse them.)
    pub fn chain(&mut self, tail: Mbuf) -> Result<(), Mbuf> {
        let (h, t) = (self.hdr(), tail.hdr());
        let (Some(segs), Some(len)) = (
            h.nb_segs.checked_add(t.nb_segs),
            h.pkt_len.checked_add(t.pkt_len),
        ) else {
            return Err(tail);
        };
        let mut last = self.0.as_ptr();
        // SAFETY: we own this packet and every segment it links to; `next` is
        // either null or a valid segment of it.
        unsafe {
            while !(*last).next.is_null() {
                last = (*last).next;
            }
            (*last).next = tail.into_raw();
        }
        let h = self.hdr_mut();
        h.nb_segs = segs;
        h.pkt_len = len;
        Ok(())
    }

    /// Total packet length (all segments).
    #[inline(always)]
    pub fn pkt_len(&self) -> u32 {
        self.hdr().pkt_len
    }

    /// Length of the data in the first segment.
    #[inline(always)]
    pub fn data_len(&self) -> u16 {
        self.hdr().data_len
    }

    /// Whether the whole packet is in one segment.
    #[inline(always)]
    pub fn is_contiguous(&self) -> bool {
        self.hdr().nb_segs == 1
    }

    /// Whether the packet came in on `port` in one segment: the segment count and
    /// the port id are neighbours in the header, so one compare tests both.
    #[inline(always)]
    pub fn whole_from(&self, port: u16) -> bool {
        let h = self.hdr();
        (u32::from(h.nb_segs) | u32::from(h.port) << 16) == (1 | u32::from(port) << 16)
    }

    /// Bytes free in front of the data (room for pushed headers).
    #[inline(always)]
    pub fn headroom(&self) -> u16 {
        self.hdr().data_off
    }

    /// Input port id, as set by the PMD.
    #[inline(always)]
    pub fn port(&self) -> u16 {
        self.hdr().port
    }

    /// Sets the port id field (for packets the dataplane makes itself).
    #[inline(always)]
    pub fn set_port(&mut self, port: u16) {
        self.hdr_mut().port = port;
    }

    /// The NIC's verdict on the IPv4 header checksum (`ol_flags`; unknown
    /// without rx checksum offload). `RX_IP_CKSUM_NONE` (header integrity checked,
    /// checksum field not to be trusted) counts as good.
    #[inline(always)]
    pub fn rx_ip4_csum(&self) -> crate::packet::RxCsum {
        use dpdk_sys::mbuf_flags::{RX_IP_CKSUM_BAD, RX_IP_CKSUM_MASK};
        match self.hdr().ol_flags & RX_IP_CKSUM_MASK {
            RX_IP_CKSUM_BAD => crate::packet::RxCsum::Bad,
            0 => crate::packet::RxCsum::Unknown,
            _ => crate::packet::RxCsum::Good,
        }
    }

    /// Sets the checksum verdict as a NIC with rx checksum offload would (for
    /// frames that did not come from one: tests, and packets the dataplane builds).
    pub fn set_rx_ip4_csum(&mut self, csum: crate::packet::RxCsum) {
        use dpdk_sys::mbuf_flags::{RX_IP_CKSUM_BAD, RX_IP_CKSUM_GOOD, RX_IP_CKSUM_MASK};
        let bits = match csum {
            crate::packet::RxCsum::Unknown => 0,
            crate::packet::RxCsum::Good => RX_IP_CKSUM_GOOD,
            crate::packet::RxCsum::Bad => RX_IP_CKSUM_BAD,
        };
        let h = self.hdr_mut();
        h.ol_flags = h.ol_flags & !RX_IP_CKSUM_MASK | bits;
    }

    /// RSS hash from the NIC (0 when the device computed none).
    #[inline(always)]
    pub fn rss_hash(&self) -> u32 {
        // SAFETY: the hash union is plain integers; any bit pattern is valid.
        unsafe { self.hdr().__bindgen_anon_2.hash.rss }
    }

    /// The first segment's data.
    #[inline(always)]
    pub fn data(&self) -> &[u8] {
        let h = self.hdr();
        // SAFETY: buf_addr + data_off .. + data_len lies inside the buffer (the PMD and
        // the pktmbuf functions keep data_off + data_len <= buf_len), and we own it.
        unsafe {
            std::slice::from_raw_parts(
                buf_start(h).add(usize::from(h.data_off)),
                usize::from(h.data_len),
            )
        }
    }

    /// The first segment's data, writable.
    #[inline(always)]
    pub fn data_mut(&mut self) -> &mut [u8] {
        let h = self.hdr_mut();
        // SAFETY: as in data(); &mut self gives exclusive access, and a refcount of 1
        // is guaranteed for mbufs we received or allocated (we never clone them).
        unsafe {
            std::slice::from_raw_parts_mut(
                buf_start(h).add(usize::from(h.data_off)),
                usize::from(h.data_len),
            )
        }
    }

    /// The whole buffer (headroom, data and tailroom), writable. The data window is
    /// [`Mbuf::window`]; pair with [`Mbuf::set_window`] after moving it.
    #[inline(always)]
    pub fn raw_mut(&mut self) -> &mut [u8] {
        let h = self.hdr_mut();
        // SAFETY: buf_addr points at buf_len bytes owned by this mbuf (single segment
        // checked by callers that care); &mut self makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(buf_start(h), usize::from(h.buf_len)) }
    }

    /// Where the data starts in the buffer and how long it is (first segment).
    #[inline(always)]
    pub fn window(&self) -> (usize, usize) {
        let h = self.hdr();
        (usize::from(h.data_off), usize::from(h.data_len))
    }

    /// Sets where the data starts in the buffer and how long it is. Refuses (returns
    /// false, unchanged) a window that does not fit the buffer or a multi-segment
    /// packet.
    #[inline(always)]
    pub fn set_window(&mut self, start: usize, len: usize) -> bool {
        let h = self.hdr_mut();
        if h.nb_segs != 1 || start + len > usize::from(h.buf_len) {
            return false;
        }
        h.data_off = start as u16;
        h.data_len = len as u16;
        h.pkt_len = len as u32;
        true
    }

    /// Shrinks the first segment's data: drops its first `front` bytes and keeps
    /// `len` from there (the packet length drops by as much). Refuses (returns
    /// false, unchanged) when they are not within the segment's data.
    #[inline(always)]
    pub fn shrink_window(&mut self, front: usize, len: usize) -> bool {
        let h = self.hdr_mut();
        let old = usize::from(h.data_len);
        if old.checked_sub(front).is_none_or(|rest| len > rest) {
            return false;
        }
        // (within the old window, so within the buffer; the packet length is at
        // least the segment's)
        h.data_off += front as u16;
        h.data_len = len as u16;
        h.pkt_len -= (old - len) as u32;
        true
    }

    /// Grows the first segment's data by `n` bytes in front, into the headroom
    /// (the packet length grows by as much), as `rte_pktmbuf_prepend` without
    /// the call. Refuses (returns false, unchanged) when the headroom is shorter.
    #[inline(always)]
    pub fn grow_front(&mut self, n: usize) -> bool {
        let h = self.hdr_mut();
        if usize::from(h.data_off) < n {
            return false;
        }
        // (the data's end stays where it was, within the buffer)
        h.data_off -= n as u16;
        h.data_len += n as u16;
        h.pkt_len += n as u32;
        true
    }

    /// Drops the first segment's first `n` bytes (the packet length drops by as
    /// much), as `rte_pktmbuf_adj`. Refuses (returns false, unchanged) when the
    /// segment is shorter.
    #[inline(always)]
    pub fn drop_front(&mut self, n: usize) -> bool {
        let h = self.hdr_mut();
        let Some(rest) = usize::from(h.data_len).checked_sub(n) else {
            return false;
        };
        // (within the old window; the packet length is at least the segment's)
        h.data_off += n as u16;
        h.data_len = rest as u16;
        h.pkt_len -= n as u32;
        true
    }

    /// Size of the whole buffer (headroom + data room).
    #[inline(always)]
    pub fn buf_len(&self) -> u16 {
        self.hdr().buf_len
    }

    /// Grows the packet at the front by `n` bytes and returns them, or `None` (packet
    /// unchanged) when the headroom is too small ([`Mbuf::grow_front`]).
    #[inline(always)]
    pub fn prepend(&mut self, n: u16) -> Option<&mut [u8]> {
        let n = usize::from(n);
        if !self.grow_front(n) {
            return None;
        }
        self.data_mut().get_mut(..n)
    }

    /// Removes `n` bytes from the front. `false` (packet unchanged) if the first
    /// segment is shorter.
    #[inline(always)]
    pub fn adj(&mut self, n: u16) -> bool {
        // SAFETY: we own the mbuf; rte_pktmbuf_adj checks the length itself.
        !unsafe { dpdk_sys::shim_rte_pktmbuf_adj(self.0.as_ptr(), n) }.is_null()
    }

    /// Grows the packet at the end by `n` bytes and returns them, or `None` when the
    /// tailroom is too small.
    pub fn append(&mut self, n: u16) -> Option<&mut [u8]> {
        // SAFETY: we own the mbuf; rte_pktmbuf_append checks tailroom itself.
        let p = unsafe { dpdk_sys::shim_rte_pktmbuf_append(self.0.as_ptr(), n) };
        if p.is_null() {
            return None;
        }
        // SAFETY: on success p points at n writable bytes inside our buffer.
        Some(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), usize::from(n)) })
    }

    /// Removes `n` bytes from the end. `false` (unchanged) if the last segment is
    /// shorter.
    pub fn trim(&mut self, n: u16) -> bool {
        // SAFETY: we own the mbuf; rte_pktmbuf_trim checks the length itself.
        unsafe { dpdk_sys::shim_rte_pktmbuf_trim(self.0.as_ptr(), n) == 0 }
    }
}

impl Drop for Mbuf {
    fn drop(&mut self) {
        // SAFETY: we own the mbuf and give it back exactly once.
        unsafe { dpdk_sys::shim_rte_pktmbuf_free(self.0.as_ptr()) }
    }
}

/// A vector of up to [`BURST`] owned mbufs: what rx fills, what the stages walk over,
/// what tx drains. Whatever is still in it when it drops is freed (in bulk).
pub struct Burst {
    pkts: [*mut dpdk_sys::rte_mbuf; BURST],
    len: usize,
}

// SAFETY: a Burst owns its mbufs (see Mbuf's Send).
unsafe impl Send for Burst {}

impl Default for Burst {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Burst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Burst").field("len", &self.len).finish()
    }
}

impl Burst {
    /// An empty burst.
    pub const fn new() -> Self {
        Burst {
            pkts: [ptr::null_mut(); BURST],
            len: 0,
        }
    }

    /// Packets held.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no packet.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Room left.
    #[inline(always)]
    pub fn room(&self) -> usize {
        BURST - self.len
    }

    /// The packets.
    #[inline(always)]
    pub fn as_slice(&self) -> &[Mbuf] {
        // SAFETY: entries [0, len) are non-null owned mbuf pointers, and Mbuf is a
        // repr(transparent) NonNull<rte_mbuf>, layout-identical to *mut rte_mbuf.
        unsafe { std::slice::from_raw_parts(self.pkts.as_ptr().cast::<Mbuf>(), self.len) }
    }

    /// The packets, writable (and reorderable: swapping keeps ownership intact).
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [Mbuf] {
        // SAFETY: as in as_slice; &mut self makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.pkts.as_mut_ptr().cast::<Mbuf>(), self.len) }
    }

    /// Appends a packet; gives it back when the burst is full.
    #[inline(always)]
    pub fn push(&mut self, m: Mbuf) -> Result<(), Mbuf> {
        if self.len == BURST {
            return Err(m);
        }
        self.pkts[self.len] = m.into_raw();
        self.len += 1;
        Ok(())
    }

    /// Removes and returns the last packet.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<Mbuf> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        let p = std::mem::replace(&mut self.pkts[self.len], ptr::null_mut());
        // SAFETY: entries below the old len are owned non-null mbufs.
        Some(unsafe { Mbuf::from_raw(NonNull::new_unchecked(p)) })
    }

    /// Moves every packet out, in order, to `f` (with its index); the burst is empty
    /// afterwards.
    #[inline(always)]
    pub fn drain_each(&mut self, mut f: impl FnMut(usize, Mbuf)) {
        let n = self.len;
        self.len = 0;
        for i in 0..n {
            let p = std::mem::replace(&mut self.pkts[i], ptr::null_mut());
            // SAFETY: entries below the old len were owned non-null mbufs; ownership
            // moves to `f` exactly once (len is already 0, so Drop will not free them).
            f(i, unsafe { Mbuf::from_raw(NonNull::new_unchecked(p)) });
        }
    }

    /// Frees every packet held.
    pub fn clear(&mut self) {
        if self.len > 0 {
            // SAFETY: entries [0, len) are owned mbufs; after the call we forget them.
            unsafe { dpdk_sys::rte_pktmbuf_free_bulk(self.pkts.as_mut_ptr(), self.len as u32) };
            self.pkts[..self.len].fill(ptr::null_mut());
            self.len = 0;
        }
    }

    /// Receives up to `max` (and at most the room left) packets from a port queue,
    /// appending them. Returns how many arrived.
    #[inline(always)]
    pub fn rx_burst(&mut self, port: u16, queue: u16, max: usize) -> usize {
        let n = max.min(self.room()) as u16;
        if n == 0 {
            return 0;
        }
        // SAFETY: the destination has room for n pointers; the PMD writes at most n
        // and hands us ownership of each. An invalid port/queue returns 0 (ethdev
        // checks them in debug builds; ports are validated when they are opened).
        let got = unsafe {
            dpdk_sys::shim_rte_eth_rx_burst(port, queue, self.pkts.as_mut_ptr().add(self.len), n)
        };
        self.len += usize::from(got);
        usize::from(got)
    }

    /// Sends the packets on a port queue. Sent packets leave the burst; those the
    /// device refused stay in it, at the front and in order. Returns how many left.
    #[inline(always)]
    pub fn tx_burst(&mut self, port: u16, queue: u16) -> usize {
        if self.len == 0 {
            return 0;
        }
        // SAFETY: entries [0, len) are owned mbufs; the PMD takes ownership of the
        // first `sent` of them and leaves the rest to us.
        let sent = usize::from(unsafe {
            dpdk_sys::shim_rte_eth_tx_burst(port, queue, self.pkts.as_mut_ptr(), self.len as u16)
        });
        self.pkts.copy_within(sent..self.len, 0);
        self.pkts[self.len - sent..self.len].fill(ptr::null_mut());
        self.len -= sent;
        sent
    }

    pub(crate) fn raw_tail(&mut self) -> (*mut *mut dpdk_sys::rte_mbuf, usize) {
        // SAFETY: len <= BURST, so the pointer stays inside the array.
        (unsafe { self.pkts.as_mut_ptr().add(self.len) }, self.room())
    }

    pub(crate) fn raw_head(&mut self) -> (*mut *mut dpdk_sys::rte_mbuf, usize) {
        (self.pkts.as_mut_ptr(), self.len)
    }

    /// Records that `n` more entries past len were filled by DPDK.
    ///
    /// # Safety
    /// Entries [len, len+n) must now hold owned, non-null mbufs.
    pub(crate) unsafe fn grow(&mut self, n: usize) {
        self.len += n;
    }

    /// Records that the first `n` entries were handed over to DPDK.
    pub(crate) fn consume_front(&mut self, n: usize) {
        self.pkts.copy_within(n..self.len, 0);
        self.pkts[self.len - n..self.len].fill(ptr::null_mut());
        self.len -= n;
    }
}

impl Drop for Burst {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Where mbuf `h`'s buffer starts: never null (a pool's mbufs get their buffer
/// when the pool is made; an attached external buffer has one too). Said to the
/// compiler, so a slice of the buffer is not tested for null per packet.
#[inline(always)]
fn buf_start(h: &dpdk_sys::rte_mbuf) -> *mut u8 {
    let p = h.buf_addr.cast::<u8>();
    // SAFETY: see above: every mbuf of a mempool has a buffer.
    unsafe { std::hint::assert_unchecked(!p.is_null()) };
    p
}

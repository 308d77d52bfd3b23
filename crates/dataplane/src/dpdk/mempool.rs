//! Packet buffer pools.

use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::eal::LIVE_OBJECTS;
use super::{DpdkError, Eal, Mbuf, rte_errno, strerror};

/// RTE_MEMPOOL_NAMESIZE (32) minus the "MP_" prefix DPDK adds, minus the NUL.
const MEMPOOL_NAME_MAX: usize = 28;

/// A pool of packet buffers (`rte_pktmbuf_pool_create`). Shared between the ports that
/// receive into it and the code that allocates from it, hence handed out in an `Arc`.
#[derive(Debug)]
pub struct Mempool {
    raw: NonNull<dpdk_sys::rte_mempool>,
    name: String,
    size: u32,
}

// SAFETY: an rte_mempool is built for concurrent use from any thread (lockless ring
// plus per-lcore caches; non-EAL threads bypass the cache).
unsafe impl Send for Mempool {}
// SAFETY: as above; all methods take &self and DPDK synchronises internally.
unsafe impl Sync for Mempool {}

impl Mempool {
    /// Creates a pool of `n` mbufs with `data_room` bytes each (headroom included;
    /// `RTE_MBUF_DEFAULT_BUF_SIZE` = 2176 holds a 1518-byte frame plus headroom) and a
    /// per-lcore cache of `cache` mbufs.
    pub fn new(
        _eal: &Eal,
        name: &str,
        n: u32,
        cache: u32,
        data_room: u16,
    ) -> Result<Arc<Mempool>, DpdkError> {
        let cname = CString::new(name)
            .map_err(|_| DpdkError::Invalid(format!("mempool name {name:?} contains NUL")))?;
        if name.len() >= MEMPOOL_NAME_MAX {
            return Err(DpdkError::Invalid(format!(
                "mempool name {name:?} is too long"
            )));
        }
        // The ring in relaxed tail sync mode: threads that are not EAL lcores (the
        // punt thread, the control thread) take and return mbufs without a cache,
        // and one of them preempted in the middle of a default (MP/MC) ring
        // operation would keep every other user of the ring spinning on its tail
        // until it runs again, for a scheduler slice when they share a CPU.
        // SAFETY: EAL is initialised (we hold &Eal); the names are valid C strings.
        let raw = unsafe {
            dpdk_sys::rte_pktmbuf_pool_create_by_ops(
                cname.as_ptr(),
                n,
                cache.min(dpdk_sys::RTE_MEMPOOL_CACHE_MAX_SIZE),
                0,
                data_room,
                dpdk_sys::SOCKET_ID_ANY,
                c"ring_mt_rts".as_ptr(),
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| DpdkError::Call {
            what: format!("mempool {name} ({n} mbufs of {data_room} bytes)"),
            reason: strerror(rte_errno()),
        })?;
        LIVE_OBJECTS.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(Mempool {
            raw,
            name: name.to_string(),
            size: n,
        }))
    }

    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of mbufs the pool was created with.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Mbufs free in the pool (per-lcore caches included).
    pub fn available(&self) -> u32 {
        // SAFETY: self.raw is a live mempool.
        unsafe { dpdk_sys::shim_rte_mempool_avail_count(self.raw.as_ptr()) }
    }

    /// Mbufs handed out and not yet returned.
    pub fn in_use(&self) -> u32 {
        // SAFETY: self.raw is a live mempool.
        unsafe { dpdk_sys::rte_mempool_in_use_count(self.raw.as_ptr()) }
    }

    /// Allocates one mbuf (empty: length 0, default headroom), or `None` when the
    /// pool is exhausted.
    pub fn alloc(&self) -> Option<Mbuf> {
        // SAFETY: self.raw is a live pktmbuf pool.
        let m = unsafe { dpdk_sys::shim_rte_pktmbuf_alloc(self.raw.as_ptr()) };
        // SAFETY: a non-null result is a freshly allocated mbuf that we now own.
        NonNull::new(m).map(|m| unsafe { Mbuf::from_raw(m) })
    }

    /// Allocates an mbuf holding a copy of `frame`. `None` if the pool is empty or
    /// the frame does not fit in one buffer.
    pub fn alloc_with(&self, frame: &[u8]) -> Option<Mbuf> {
        let mut m = self.alloc()?;
        let len = u16::try_from(frame.len()).ok()?;
        m.append(len)?.copy_from_slice(frame);
        Some(m)
    }

    pub(crate) fn as_ptr(&self) -> *mut dpdk_sys::rte_mempool {
        self.raw.as_ptr()
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // Mbufs do not keep their pool alive, so free the pool only when none is
        // outstanding; otherwise leak it (memory stays valid for the stragglers).
        if self.in_use() == 0 {
            // SAFETY: no mbuf of this pool is alive and no port uses it any more
            // (ports hold an Arc and are closed before their last reference drops).
            unsafe { dpdk_sys::rte_mempool_free(self.raw.as_ptr()) };
            LIVE_OBJECTS.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

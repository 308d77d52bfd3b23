//! DPDK rings of mbufs: the backing store of `net_ring` ports in tests, and a
//! lockless queue between threads.

use std::ffi::CString;
use std::ptr::NonNull;

use super::{Burst, DpdkError, Eal, rte_errno, strerror};

/// A ring of mbuf pointers (`rte_ring`), multi-producer/multi-consumer. It owns the
/// mbufs it holds: what is left in it when it drops is freed.
#[derive(Debug)]
pub struct Ring {
    raw: NonNull<dpdk_sys::rte_ring>,
    name: String,
}

// SAFETY: an MP/MC rte_ring is safe to use from any number of threads at once.
unsafe impl Send for Ring {}
// SAFETY: as above.
unsafe impl Sync for Ring {}

impl Ring {
    /// Creates a ring holding up to `count - 1` mbufs (`count` a power of two).
    pub fn new(_eal: &Eal, name: &str, count: u32) -> Result<Ring, DpdkError> {
        if !count.is_power_of_two() {
            return Err(DpdkError::Invalid(format!(
                "ring {name}: size {count} is not a power of two"
            )));
        }
        let cname = CString::new(name)
            .map_err(|_| DpdkError::Invalid(format!("ring name {name:?} contains NUL")))?;
        // SAFETY: EAL is initialised (&Eal); name is a valid C string; flags 0 = MP/MC.
        let raw =
            unsafe { dpdk_sys::rte_ring_create(cname.as_ptr(), count, dpdk_sys::SOCKET_ID_ANY, 0) };
        let raw = NonNull::new(raw).ok_or_else(|| DpdkError::Call {
            what: format!("ring {name}"),
            reason: strerror(rte_errno()),
        })?;
        Ok(Ring {
            raw,
            name: name.to_string(),
        })
    }

    /// The ring's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Mbufs in the ring.
    pub fn count(&self) -> u32 {
        // SAFETY: self.raw is a live ring.
        unsafe { dpdk_sys::shim_rte_ring_count(self.raw.as_ptr()) }
    }

    /// Moves as many packets as fit from the front of `b` into the ring. Returns how
    /// many moved; the rest stay in `b`.
    pub fn enqueue_burst(&self, b: &mut Burst) -> usize {
        let (p, n) = b.raw_head();
        // SAFETY: p holds n owned mbufs; the ring takes ownership of the first `done`.
        let done =
            unsafe { dpdk_sys::shim_rte_ring_enqueue_burst(self.raw.as_ptr(), p.cast(), n as u32) }
                as usize;
        b.consume_front(done);
        done
    }

    /// Moves up to the room left in `b` out of the ring into `b`. Returns how many.
    pub fn dequeue_burst(&self, b: &mut Burst) -> usize {
        let (p, room) = b.raw_tail();
        // SAFETY: p has room for `room` pointers; each dequeued mbuf is owned by us now.
        let got = unsafe {
            dpdk_sys::shim_rte_ring_dequeue_burst(self.raw.as_ptr(), p.cast(), room as u32)
        } as usize;
        // SAFETY: the ring only ever holds owned non-null mbufs (enqueue_burst or a
        // net_ring port's tx put them there).
        unsafe { b.grow(got) };
        got
    }

    pub(crate) fn as_ptr(&self) -> *mut dpdk_sys::rte_ring {
        self.raw.as_ptr()
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        let mut b = Burst::new();
        while self.dequeue_burst(&mut b) > 0 {
            b.clear();
        }
        // SAFETY: the ring is empty and no port uses it any more (ring ports hold an
        // Arc<Ring> and are closed first).
        unsafe { dpdk_sys::rte_ring_free(self.raw.as_ptr()) };
    }
}

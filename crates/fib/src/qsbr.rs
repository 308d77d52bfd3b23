//! Quiescent-state based reclamation for slots inside the shared tables.
//!
//! Readers announce "I am reading, and I saw epoch `e`" once per burst and "I am
//! quiescent" at the end of it. The writer unlinks a slot, bumps the epoch to `e'` and
//! tags the slot with `e'`; it reuses the slot only once every reader is either
//! quiescent or announced an epoch `>= e'` (that reader started after the unlink and
//! cannot hold the old index). This is the QSBR scheme of McKenney & Slingwine (RCU),
//! as DPDK's `rte_rcu_qsbr` uses it for `rte_lpm` tbl8 groups.
//!
//! Memory safety never depends on this: slots are indices into atomic arrays, so a bug
//! here could only produce a stale answer, never undefined behaviour.

use std::sync::atomic::{AtomicU64, Ordering, fence};
use std::sync::{Arc, Mutex, PoisonError};

/// Slot value of a quiescent reader.
const QUIESCENT: u64 = 0;

/// Shared epoch state: the global epoch and one slot per registered reader.
#[derive(Debug)]
pub(crate) struct Qsbr {
    epoch: AtomicU64,
    /// Registration only (reader creation and drop); never taken on the lookup path.
    readers: Mutex<Vec<Arc<AtomicU64>>>,
}

impl Qsbr {
    pub(crate) fn new() -> Self {
        Self {
            epoch: AtomicU64::new(1),
            readers: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn register(&self) -> Arc<AtomicU64> {
        let slot = Arc::new(AtomicU64::new(QUIESCENT));
        self.readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(slot.clone());
        slot
    }

    pub(crate) fn unregister(&self, slot: &Arc<AtomicU64>) {
        self.readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|s| !Arc::ptr_eq(s, slot));
    }

    /// Reader: enter a read-side section. Must precede every table load of the burst.
    #[inline]
    pub(crate) fn enter(&self, slot: &AtomicU64) {
        let e = self.epoch.load(Ordering::Acquire);
        slot.store(e, Ordering::Relaxed);
        // Store-load barrier: the writer either sees this slot or we see its unlink.
        fence(Ordering::SeqCst);
    }

    /// Reader: leave the read-side section (a quiescent point).
    #[inline]
    pub(crate) fn leave(&self, slot: &AtomicU64) {
        slot.store(QUIESCENT, Ordering::Release);
    }

    /// Writer: the epoch that slots retired now will be tagged with.
    pub(crate) fn next_epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed) + 1
    }

    /// Writer: publish the end of an update (after all unlinks of that update).
    pub(crate) fn advance(&self) -> u64 {
        self.epoch.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Writer: every slot tagged with an epoch `<=` the returned value may be reused.
    pub(crate) fn safe_epoch(&self) -> u64 {
        fence(Ordering::SeqCst);
        let readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        let mut min = self.epoch.load(Ordering::SeqCst);
        for r in readers.iter() {
            let e = r.load(Ordering::SeqCst);
            if e != QUIESCENT && e < min {
                min = e;
            }
        }
        min
    }
}

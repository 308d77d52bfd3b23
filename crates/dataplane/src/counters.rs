//! Counters with a single writer (the worker that owns them) and any number of
//! readers (the control thread). Writes are a relaxed load and store, never a
//! read-modify-write, so they cost what a plain add costs; readers see a value that
//! is at most one update old.

use std::sync::atomic::{AtomicU64, Ordering};

/// One counter. Only its owning worker may call [`Counter::add`].
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// A counter at zero.
    pub const fn new() -> Self {
        Counter(AtomicU64::new(0))
    }

    /// Adds `n`. Single writer only: two threads adding to one counter lose updates.
    #[inline(always)]
    pub fn add(&self, n: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }

    /// Adds one.
    #[inline(always)]
    pub fn inc(&self) {
        self.add(1)
    }

    /// Reads the value (any thread).
    #[inline(always)]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::Counter;

    #[test]
    fn single_writer_counts_exactly() {
        let c = std::sync::Arc::new(Counter::new());
        let w = c.clone();
        let t = std::thread::spawn(move || {
            for _ in 0..100_000 {
                w.inc();
            }
        });
        t.join().unwrap();
        assert_eq!(c.get(), 100_000);
        c.add(5);
        assert_eq!(c.get(), 100_005);
    }
}

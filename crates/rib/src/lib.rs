//! The routing information base: for every key (a route's table and prefix, a
//! label entry, a neighbour), the candidates each source offers, and the one
//! that wins.
//!
//! A candidate is named by its source and a metric (0 where the source has
//! none). The winner is the candidate whose source ranks first, then with the
//! lowest metric; withdrawing it reveals the next. The RIB does no I/O and knows
//! nothing of forwarding: its user publishes winners (to a FIB, a label table),
//! and it is told *before* a change makes a new winner, so a refused winner
//! leaves the RIB as it was ([`Rib::insert_with`]).
//!
//! A source that reads its whole state again (a netlink dump, a zebra walk)
//! marks its candidates ([`Rib::mark`]), offers the state again, and sweeps what
//! it did not offer ([`Rib::sweep`]).
//!
//! ```
//! use rib::{Rib, Source};
//!
//! #[derive(Clone, Copy, PartialEq, Eq, Debug)]
//! enum From { Operator, Daemon }
//! impl Source for From {
//!     const COUNT: usize = 2;
//!     fn index(self) -> usize { self as usize }
//! }
//!
//! let mut rib: Rib<&str, From, u32> = Rib::new();
//! let mut fib = None;
//! rib.insert_with("10.0.0.0/8", From::Daemon, 20, 1, |v| { fib = Some(*v); Ok::<_, ()>(()) }).unwrap();
//! rib.insert_with("10.0.0.0/8", From::Operator, 0, 2, |v| { fib = Some(*v); Ok::<_, ()>(()) }).unwrap();
//! assert_eq!(fib, Some(2));
//! let gone = rib.remove(&"10.0.0.0/8", From::Operator, 0).unwrap();
//! assert!(gone.was_winner);
//! assert_eq!(rib.winner(&"10.0.0.0/8").map(|w| *w.value), Some(1));
//! ```

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::fmt;

/// Who offers candidates. Sources are numbered `0..COUNT`.
pub trait Source: Copy + Eq + fmt::Debug {
    /// How many sources there are.
    const COUNT: usize;
    /// This source's number, `< COUNT`.
    fn index(self) -> usize;
}

/// One candidate as the RIB shows it.
#[derive(Debug, PartialEq, Eq)]
pub struct Candidate<'a, S, V> {
    /// Who offers it.
    pub source: S,
    /// Its metric within the source (lower wins).
    pub metric: u32,
    /// What it is.
    pub value: &'a V,
}

impl<S: Copy, V> Clone for Candidate<'_, S, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: Copy, V> Copy for Candidate<'_, S, V> {}

/// What [`Rib::insert_with`] did.
#[derive(Debug, PartialEq, Eq)]
pub struct Inserted<V> {
    /// The value the same candidate (source and metric) had before.
    pub replaced: Option<V>,
    /// The candidate is the key's winner now.
    pub won: bool,
}

/// What [`Rib::remove`] did.
#[derive(Debug, PartialEq, Eq)]
pub struct Removed<V> {
    /// The candidate's value.
    pub value: V,
    /// It was the key's winner: the next candidate, if any
    /// ([`Rib::winner`]), is to be published in its place.
    pub was_winner: bool,
}

/// A ranking that is not an order of every source, or one changed while
/// candidates exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RankError {
    /// A source is named twice.
    Twice(String),
    /// A source is not named.
    Missing(String),
    /// A source that offers candidates would move: winners would change
    /// without being published.
    NotEmpty,
}

impl fmt::Display for RankError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RankError::Twice(s) => write!(f, "{s} is named twice"),
            RankError::Missing(s) => write!(f, "{s} is missing"),
            RankError::NotEmpty => write!(f, "candidates exist already: set it at start"),
        }
    }
}

impl std::error::Error for RankError {}

/// A candidate as stored: 16 bytes with a one-byte source and an `Arc` value.
#[derive(Debug, Clone)]
struct Cand<S, V> {
    source: S,
    /// The source's epoch when the candidate was last offered (see [`Rib::mark`]).
    epoch: u16,
    metric: u32,
    value: V,
}

/// A key's candidates. Most keys have one; the enum stays the size of one.
#[derive(Debug, Clone)]
enum Slot<S, V> {
    One(Cand<S, V>),
    /// Two or more, most preferred first.
    #[allow(clippy::box_collection)]
    Many(Box<Vec<Cand<S, V>>>),
}

impl<S: Source, V> Slot<S, V> {
    fn as_slice(&self) -> &[Cand<S, V>] {
        match self {
            Slot::One(c) => std::slice::from_ref(c),
            Slot::Many(v) => v,
        }
    }

    fn best(&self) -> &Cand<S, V> {
        &self.as_slice()[0]
    }

    fn find(&self, source: S, metric: u32) -> Option<usize> {
        self.as_slice()
            .iter()
            .position(|c| c.source == source && c.metric == metric)
    }

    /// Where `source`'s candidate with `metric` is, and whether offering it
    /// (again) makes it the winner.
    fn offer(&self, rank: &[u8], source: S, metric: u32) -> (Option<usize>, bool) {
        let at = self.find(source, metric);
        let best = self.best();
        let pref = (rank[source.index()], metric);
        (
            at,
            at == Some(0) || pref < (rank[best.source.index()], best.metric),
        )
    }
}

/// Candidates per key from ranked sources; see the crate docs.
#[derive(Debug, Clone)]
pub struct Rib<K, S, V> {
    map: BTreeMap<K, Slot<S, V>>,
    /// Each source's rank, by index (0 = most preferred).
    rank: Vec<u8>,
    /// Each source's epoch, bumped by [`Rib::mark`].
    epoch: Vec<u16>,
    /// Sources between [`Rib::mark`] and [`Rib::sweep`].
    marking: Vec<bool>,
    /// Candidates per source.
    count: Vec<usize>,
}

impl<K: Ord + Clone, S: Source, V> Default for Rib<K, S, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord + Clone, S: Source, V> Rib<K, S, V> {
    /// An empty RIB; sources rank in the order of their numbers.
    pub fn new() -> Self {
        assert!(S::COUNT <= usize::from(u8::MAX), "too many sources");
        Rib {
            map: BTreeMap::new(),
            rank: (0..S::COUNT as u8).collect(),
            epoch: vec![0; S::COUNT],
            marking: vec![false; S::COUNT],
            count: vec![0; S::COUNT],
        }
    }

    /// Orders the sources, most preferred first, each once. A source that
    /// offers candidates keeps its rank (refused otherwise).
    pub fn set_ranking(&mut self, order: &[S]) -> Result<(), RankError> {
        let mut rank = vec![u8::MAX; S::COUNT];
        for (i, s) in order.iter().enumerate() {
            if rank[s.index()] != u8::MAX {
                return Err(RankError::Twice(format!("{s:?}")));
            }
            rank[s.index()] = i as u8;
        }
        if let Some(i) = rank.iter().position(|&r| r == u8::MAX) {
            return Err(RankError::Missing(format!("source {i}")));
        }
        // Only the sources that offer nothing may move: no winner changes.
        if (0..S::COUNT).any(|i| rank[i] != self.rank[i] && self.count[i] > 0) {
            return Err(RankError::NotEmpty);
        }
        self.rank = rank;
        Ok(())
    }

    /// The rank of `source` (0 = most preferred).
    pub fn rank(&self, source: S) -> u8 {
        self.rank[source.index()]
    }

    fn pref(&self, source: S, metric: u32) -> (u8, u32) {
        (self.rank[source.index()], metric)
    }

    /// How many candidates `source` offers.
    pub fn count(&self, source: S) -> usize {
        self.count[source.index()]
    }

    /// The candidate that wins for `key`.
    pub fn winner(&self, key: &K) -> Option<Candidate<'_, S, V>> {
        self.map.get(key).map(|s| view(s.best()))
    }

    /// Whether `source`'s candidate for `key` with `metric`, offered now, would
    /// win (what [`Rib::insert_with`] publishes).
    pub fn would_win(&self, key: &K, source: S, metric: u32) -> bool {
        self.map
            .get(key)
            .is_none_or(|s| s.offer(&self.rank, source, metric).1)
    }

    /// Every candidate for `key`, the winner first.
    pub fn candidates<'a>(
        &'a self,
        key: &K,
    ) -> impl Iterator<Item = Candidate<'a, S, V>> + use<'a, K, S, V> {
        self.map
            .get(key)
            .map(Slot::as_slice)
            .unwrap_or_default()
            .iter()
            .map(view)
    }

    /// `source`'s candidate for `key` with `metric`.
    pub fn get(&self, key: &K, source: S, metric: u32) -> Option<&V> {
        let s = self.map.get(key)?;
        s.find(source, metric).map(|i| &s.as_slice()[i].value)
    }

    /// `source`'s best candidate for `key` (its lowest metric).
    pub fn best_of(&self, key: &K, source: S) -> Option<Candidate<'_, S, V>> {
        self.map
            .get(key)?
            .as_slice()
            .iter()
            .find(|c| c.source == source)
            .map(view)
    }

    /// Every key's winner, in key order.
    pub fn winners(&self) -> impl Iterator<Item = (&K, Candidate<'_, S, V>)> + '_ {
        self.map.iter().map(|(k, s)| (k, view(s.best())))
    }

    /// Every candidate `source` offers: (key, metric, value), in key order.
    pub fn of_source(&self, source: S) -> impl Iterator<Item = (&K, u32, &V)> + '_ {
        self.map.iter().flat_map(move |(k, s)| {
            s.as_slice()
                .iter()
                .filter(move |c| c.source == source)
                .map(move |c| (k, c.metric, &c.value))
        })
    }

    /// Adds or replaces `source`'s candidate for `key` with `metric`. When it is
    /// to win, `publish` is called with it first: an error leaves the RIB as it
    /// was and is returned.
    pub fn insert_with<E>(
        &mut self,
        key: K,
        source: S,
        metric: u32,
        value: V,
        publish: impl FnOnce(&V) -> Result<(), E>,
    ) -> Result<Inserted<V>, E> {
        let pref = self.pref(source, metric);
        let epoch = self.epoch[source.index()];
        let rank = &self.rank;
        let cand = Cand {
            source,
            epoch,
            metric,
            value,
        };
        match self.map.entry(key) {
            std::collections::btree_map::Entry::Vacant(v) => {
                publish(&cand.value)?;
                v.insert(Slot::One(cand));
                self.count[source.index()] += 1;
                Ok(Inserted {
                    replaced: None,
                    won: true,
                })
            }
            std::collections::btree_map::Entry::Occupied(mut o) => {
                let slot = o.get_mut();
                let (at, won) = slot.offer(rank, source, metric);
                if won {
                    publish(&cand.value)?;
                }
                let replaced = match (at, slot) {
                    (Some(_), Slot::One(c)) => Some(std::mem::replace(c, cand).value),
                    (Some(i), Slot::Many(v)) => Some(std::mem::replace(&mut v[i], cand).value),
                    (None, slot) => {
                        let old = std::mem::replace(slot, Slot::Many(Box::default()));
                        let mut v = match old {
                            Slot::One(c) => vec![c],
                            Slot::Many(v) => *v,
                        };
                        let i = v.partition_point(|c| (rank[c.source.index()], c.metric) < pref);
                        v.insert(i, cand);
                        *slot = Slot::Many(Box::new(v));
                        None
                    }
                };
                if replaced.is_none() {
                    self.count[source.index()] += 1;
                }
                Ok(Inserted { replaced, won })
            }
        }
    }

    /// Adds or replaces a candidate that may always be published (see
    /// [`Rib::insert_with`]).
    pub fn insert(&mut self, key: K, source: S, metric: u32, value: V) -> Inserted<V> {
        match self.insert_with(key, source, metric, value, |_| Ok::<(), ()>(())) {
            Ok(i) => i,
            Err(()) => unreachable!("publishing cannot fail"),
        }
    }

    /// Removes `source`'s candidate for `key` with `metric`.
    pub fn remove(&mut self, key: &K, source: S, metric: u32) -> Option<Removed<V>> {
        let slot = self.map.get_mut(key)?;
        let i = slot.find(source, metric)?;
        self.count[source.index()] -= 1;
        let cand = match slot {
            Slot::One(_) => match self.map.remove(key) {
                Some(Slot::One(c)) => c,
                _ => unreachable!("the slot was found with one candidate"),
            },
            Slot::Many(v) => {
                let c = v.remove(i);
                if v.len() == 1 {
                    let last = v.pop().expect("one left");
                    *slot = Slot::One(last);
                }
                c
            }
        };
        Some(Removed {
            value: cand.value,
            was_winner: i == 0,
        })
    }

    /// Starts a refresh of `source`: every candidate it offers from now on is
    /// fresh; [`Rib::sweep`] gives the others. Marking again restarts it.
    pub fn mark(&mut self, source: S) {
        let s = source.index();
        self.marking[s] = true;
        self.epoch[s] = self.epoch[s].wrapping_add(1);
        if self.epoch[s] == 0 {
            // Wrapped: a candidate stamped 65,536 marks ago must not pass for
            // fresh. Stamp every candidate of the source stale.
            for slot in self.map.values_mut() {
                match slot {
                    Slot::One(c) if c.source == source => c.epoch = u16::MAX,
                    Slot::One(_) => {}
                    Slot::Many(v) => v
                        .iter_mut()
                        .filter(|c| c.source == source)
                        .for_each(|c| c.epoch = u16::MAX),
                }
            }
        }
    }

    /// Whether `source`'s candidate for `key` with `metric` was offered since
    /// the refresh began ([`Rib::mark`]); false when none runs or there is no
    /// such candidate.
    pub fn is_fresh(&self, key: &K, source: S, metric: u32) -> bool {
        let s = source.index();
        self.marking[s]
            && self.map.get(key).is_some_and(|slot| {
                slot.find(source, metric)
                    .is_some_and(|i| slot.as_slice()[i].epoch == self.epoch[s])
            })
    }

    /// Makes `source`'s candidate for `key` with `metric` stale again during a
    /// refresh: [`Rib::sweep`] gives it unless it is offered again first.
    /// False when the source is not marking or has no such candidate.
    pub fn set_stale(&mut self, key: &K, source: S, metric: u32) -> bool {
        let s = source.index();
        if !self.marking[s] {
            return false;
        }
        let stale = self.epoch[s].wrapping_sub(1);
        let Some(slot) = self.map.get_mut(key) else {
            return false;
        };
        let Some(i) = slot.find(source, metric) else {
            return false;
        };
        match slot {
            Slot::One(c) => c.epoch = stale,
            Slot::Many(v) => v[i].epoch = stale,
        }
        true
    }

    /// Ends a refresh of `source`: the candidates it did not offer since
    /// [`Rib::mark`], as (key, metric). They are still in the RIB: remove each
    /// ([`Rib::remove`]) and publish what it reveals.
    pub fn sweep(&mut self, source: S) -> Vec<(K, u32)> {
        let s = source.index();
        if !std::mem::take(&mut self.marking[s]) {
            return Vec::new();
        }
        let epoch = self.epoch[s];
        self.map
            .iter()
            .flat_map(|(k, slot)| {
                slot.as_slice()
                    .iter()
                    .filter(|c| c.source == source && c.epoch != epoch)
                    .map(|c| (k.clone(), c.metric))
            })
            .collect()
    }
}

fn view<S: Copy, V>(c: &Cand<S, V>) -> Candidate<'_, S, V> {
    Candidate {
        source: c.source,
        metric: c.metric,
        value: &c.value,
    }
}

#[cfg(test)]
mod tests;

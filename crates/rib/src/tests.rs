//! The RIB against a reference model recomputed from scratch.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Src {
    A,
    B,
    C,
    D,
}

impl Source for Src {
    const COUNT: usize = 4;
    fn index(self) -> usize {
        self as usize
    }
}

const SRCS: [Src; 4] = [Src::A, Src::B, Src::C, Src::D];

#[derive(Debug, Clone)]
enum Op {
    /// Offer (key, source, metric, value); `refuse`: publishing it fails.
    Insert(u8, Src, u32, u16, bool),
    Remove(u8, Src, u32),
    Mark(Src),
    Sweep(Src),
    /// Makes a candidate stale again while its source marks.
    Stale(u8, Src, u32),
}

impl Op {
    fn source(&self) -> Src {
        match *self {
            Op::Insert(_, s, ..)
            | Op::Remove(_, s, _)
            | Op::Mark(s)
            | Op::Sweep(s)
            | Op::Stale(_, s, _) => s,
        }
    }
}

fn op() -> impl Strategy<Value = Op> {
    let src = prop::sample::select(SRCS.to_vec());
    prop_oneof![
        6 => (0u8..12, src.clone(), 0u32..3, any::<u16>(), prop::bool::weighted(0.1))
            .prop_map(|(k, s, m, v, r)| Op::Insert(k, s, m, v, r)),
        3 => (0u8..12, src.clone(), 0u32..3).prop_map(|(k, s, m)| Op::Remove(k, s, m)),
        1 => src.clone().prop_map(Op::Mark),
        1 => src.clone().prop_map(Op::Sweep),
        1 => (0u8..12, src, 0u32..3).prop_map(|(k, s, m)| Op::Stale(k, s, m)),
    ]
}

fn ranking() -> impl Strategy<Value = Vec<Src>> {
    Just(SRCS.to_vec()).prop_shuffle()
}

/// The reference: every candidate, the winners computed from scratch.
#[derive(Debug, Default, Clone)]
struct Model {
    cands: BTreeMap<(u8, usize, u32), u16>,
    marking: BTreeMap<usize, BTreeSet<(u8, u32)>>,
    rank: Vec<u8>,
}

impl Model {
    fn new(order: &[Src]) -> Model {
        let mut rank = vec![0; 4];
        for (i, s) in order.iter().enumerate() {
            rank[s.index()] = i as u8;
        }
        Model {
            rank,
            ..Model::default()
        }
    }

    /// Sorted candidates of `k`: (rank, metric, source, value).
    fn of(&self, k: u8) -> Vec<(u8, u32, usize, u16)> {
        let mut v: Vec<_> = self
            .cands
            .range((k, 0, 0)..=(k, usize::MAX, u32::MAX))
            .map(|(&(_, s, m), &v)| (self.rank[s], m, s, v))
            .collect();
        v.sort();
        v
    }

    fn winner(&self, k: u8) -> Option<(usize, u32, u16)> {
        self.of(k).first().map(|&(_, m, s, v)| (s, m, v))
    }
}

/// A FIB the RIB's user publishes into.
type Fib = BTreeMap<u8, u16>;

/// Applies `op` to the RIB (and the FIB it publishes into) and to the model.
fn apply(rib: &mut Rib<u8, Src, u16>, fib: &mut Fib, model: &mut Model, op: &Op) {
    match *op {
        Op::Insert(k, s, m, v, refuse) => {
            let asked = rib.would_win(&k, s, m);
            let r = rib.insert_with(k, s, m, v, |&v| {
                if refuse {
                    Err("refused")
                } else {
                    fib.insert(k, v);
                    Ok(())
                }
            });
            let would_win = match model.winner(k) {
                None => true,
                Some((ws, wm, _)) => {
                    (ws, wm) == (s.index(), m) || (model.rank[s.index()], m) < (model.rank[ws], wm)
                }
            };
            assert_eq!(asked, would_win);
            if refuse && would_win {
                assert_eq!(r, Err("refused"));
                return;
            }
            let old = model.cands.insert((k, s.index(), m), v);
            let ins = r.expect("not refused");
            assert_eq!(ins.replaced, old);
            assert_eq!(ins.won, would_win);
            if let Some(set) = model.marking.get_mut(&s.index()) {
                set.insert((k, m));
            }
        }
        Op::Remove(k, s, m) => {
            let was = model.winner(k);
            let old = model.cands.remove(&(k, s.index(), m));
            let r = rib.remove(&k, s, m);
            assert_eq!(r.as_ref().map(|r| r.value), old);
            if let Some(r) = r {
                assert_eq!(
                    r.was_winner,
                    was.is_some_and(|w| (w.0, w.1) == (s.index(), m))
                );
                if r.was_winner {
                    unpublish(rib, fib, k);
                }
            }
        }
        Op::Stale(k, s, m) => {
            let there = model.cands.contains_key(&(k, s.index(), m));
            let r = rib.set_stale(&k, s, m);
            match model.marking.get_mut(&s.index()) {
                Some(fresh) => {
                    assert_eq!(r, there);
                    fresh.remove(&(k, m));
                }
                None => assert!(!r),
            }
        }
        Op::Mark(s) => {
            rib.mark(s);
            model.marking.insert(s.index(), BTreeSet::new());
        }
        Op::Sweep(s) => {
            let stale = rib.sweep(s);
            let expect: Vec<(u8, u32)> = match model.marking.remove(&s.index()) {
                None => Vec::new(),
                Some(fresh) => model
                    .cands
                    .keys()
                    .filter(|&&(k, si, m)| si == s.index() && !fresh.contains(&(k, m)))
                    .map(|&(k, _, m)| (k, m))
                    .collect(),
            };
            assert_eq!(stale, expect);
            for (k, m) in stale {
                model.cands.remove(&(k, s.index(), m));
                if rib.remove(&k, s, m).expect("stale is there").was_winner {
                    unpublish(rib, fib, k);
                }
            }
        }
    }
}

/// After a winner went: the next one is published, or the key leaves the FIB.
fn unpublish(rib: &Rib<u8, Src, u16>, fib: &mut Fib, k: u8) {
    match rib.winner(&k) {
        Some(w) => fib.insert(k, *w.value),
        None => fib.remove(&k),
    };
}

/// Every candidate of every key, in order.
fn snapshot(rib: &Rib<u8, Src, u16>) -> Vec<(u8, Src, u32, u16)> {
    (0..12u8)
        .flat_map(|k| {
            rib.candidates(&k)
                .map(move |c| (k, c.source, c.metric, *c.value))
        })
        .collect()
}

fn check(rib: &Rib<u8, Src, u16>, fib: &Fib, model: &Model) {
    for k in 0..12u8 {
        let want: Vec<_> = model
            .of(k)
            .into_iter()
            .map(|(_, m, s, v)| (s, m, v))
            .collect();
        let got: Vec<_> = rib
            .candidates(&k)
            .map(|c| (c.source.index(), c.metric, *c.value))
            .collect();
        assert_eq!(got, want, "key {k}");
        assert_eq!(
            fib.get(&k).copied(),
            model.winner(k).map(|w| w.2),
            "key {k}"
        );
        assert_eq!(
            rib.winner(&k)
                .map(|w| (w.source.index(), w.metric, *w.value)),
            model.winner(k)
        );
    }
    for s in SRCS {
        let n = model.cands.keys().filter(|c| c.1 == s.index()).count();
        assert_eq!(rib.count(s), n, "{s:?}");
        assert_eq!(rib.of_source(s).count(), n, "{s:?}");
    }
    assert_eq!(rib.winners().count(), fib.len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// After every operation, the candidates, the winners and what was
    /// published equal the model's.
    #[test]
    fn winners_equal_a_model_recomputed_from_scratch(
        order in ranking(),
        ops in prop::collection::vec(op(), 0..200),
    ) {
        let mut rib = Rib::new();
        rib.set_ranking(&order).unwrap();
        let (mut fib, mut model) = (Fib::new(), Model::new(&order));
        for op in &ops {
            apply(&mut rib, &mut fib, &mut model, op);
            check(&rib, &fib, &model);
        }
    }

    /// Withdrawing a whole source leaves exactly the state built without it.
    #[test]
    fn withdrawing_a_source_leaves_the_state_built_without_it(
        order in ranking(),
        ops in prop::collection::vec(op(), 0..200),
        gone in prop::sample::select(SRCS.to_vec()),
    ) {
        // Whether publishing fails depends on what else is there (a candidate
        // that waits is never published): only what every state accepts.
        let ops: Vec<Op> = ops
            .into_iter()
            .map(|o| match o {
                Op::Insert(k, s, m, v, _) => Op::Insert(k, s, m, v, false),
                o => o,
            })
            .collect();
        let mut rib = Rib::new();
        rib.set_ranking(&order).unwrap();
        let (mut fib, mut model) = (Fib::new(), Model::new(&order));
        for op in &ops {
            apply(&mut rib, &mut fib, &mut model, op);
        }
        let mine: Vec<_> = rib.of_source(gone).map(|(k, m, _)| (*k, m)).collect();
        for (k, m) in mine {
            apply(&mut rib, &mut fib, &mut model, &Op::Remove(k, gone, m));
        }
        let mut without = Rib::new();
        without.set_ranking(&order).unwrap();
        let (mut fib2, mut model2) = (Fib::new(), Model::new(&order));
        for op in ops.iter().filter(|o| o.source() != gone) {
            apply(&mut without, &mut fib2, &mut model2, op);
        }
        prop_assert_eq!(snapshot(&rib), snapshot(&without));
        prop_assert_eq!(fib, fib2);
    }

    /// A refused candidate leaves nothing behind.
    #[test]
    fn a_refused_candidate_leaves_nothing(
        ops in prop::collection::vec(op(), 0..100),
        k in 0u8..12, s in prop::sample::select(SRCS.to_vec()), m in 0u32..3,
    ) {
        let mut rib = Rib::new();
        let (mut fib, mut model) = (Fib::new(), Model::new(&SRCS));
        for op in &ops {
            apply(&mut rib, &mut fib, &mut model, op);
        }
        let before = snapshot(&rib);
        let counts: Vec<_> = SRCS.iter().map(|&s| rib.count(s)).collect();
        let r = rib.insert_with(k, s, m, 7, |_| Err(()));
        if r.is_err() {
            prop_assert_eq!(snapshot(&rib), before);
            let after: Vec<_> = SRCS.iter().map(|&s| rib.count(s)).collect();
            prop_assert_eq!(after, counts);
        } else {
            // Not to win: it waits, and publishing was never asked.
            prop_assert!(!r.unwrap().won);
            prop_assert_eq!(rib.get(&k, s, m), Some(&7));
        }
    }
}

#[test]
fn rankings_name_every_source_once_and_move_only_sources_without_candidates() {
    let mut rib: Rib<u8, Src, u16> = Rib::new();
    assert!(matches!(
        rib.set_ranking(&[Src::A, Src::A, Src::B, Src::C]),
        Err(RankError::Twice(_))
    ));
    assert!(matches!(
        rib.set_ranking(&[Src::A, Src::B, Src::C]),
        Err(RankError::Missing(_))
    ));
    rib.set_ranking(&[Src::D, Src::C, Src::B, Src::A]).unwrap();
    assert_eq!(rib.rank(Src::D), 0);
    rib.insert(1, Src::A, 0, 1);
    assert_eq!(
        rib.set_ranking(&SRCS),
        Err(RankError::NotEmpty),
        "winners would change unpublished"
    );
    // B and C swap; A and D, which may hold candidates, stay.
    rib.set_ranking(&[Src::D, Src::B, Src::C, Src::A]).unwrap();
    assert_eq!(rib.rank(Src::B), 1);
}

#[test]
fn marks_that_wrap_never_pass_stale_candidates_for_fresh() {
    let mut rib: Rib<u8, Src, u16> = Rib::new();
    rib.insert(1, Src::A, 0, 1);
    rib.insert(2, Src::A, 0, 2);
    for _ in 0..65_535 {
        rib.mark(Src::A);
    }
    rib.insert(2, Src::A, 0, 2);
    // The epoch wraps to the first candidate's stamp here.
    rib.mark(Src::A);
    rib.insert(2, Src::A, 0, 2);
    // 1 is stale, 2 fresh.
    assert_eq!(rib.sweep(Src::A), vec![(1, 0)]);
}

#[test]
fn a_candidate_is_the_size_of_its_value_and_two_words() {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Six {
        A,
    }
    impl Source for Six {
        const COUNT: usize = 1;
        fn index(self) -> usize {
            0
        }
    }
    let _ = Six::A;
    assert_eq!(std::mem::size_of::<Slot<Six, std::sync::Arc<u64>>>(), 16);
}

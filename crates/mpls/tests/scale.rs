//! The label table at a per-prefix PE's scale: a million labels, each its own
//! entry (its own out-label and adjacency), read back through the switching
//! path a worker runs, after a load, after half is replaced and withdrawn, and
//! at its capacity.

use mpls::{ConfigError, LabelAction, LabelTable};

const N: u32 = 1_000_000;
const FIRST: u32 = 16;

/// The top entry of label `l`, bottom of stack, TTL 64 (host order).
fn lse(l: u32) -> u32 {
    l << 12 | 1 << 8 | 64
}

/// Entry `i`'s action in generation `g`: its own out-label and adjacency.
fn action(i: u32, g: u32) -> LabelAction {
    LabelAction::swap(i + g * N, &[FIRST + (i + g * 7919) % N])
}

/// Labels whose switching answer is not entry `i`'s of the generation in
/// `want[i]` (`None`: no entry, the packet is dropped).
fn wrong(t: &LabelTable, want: &[Option<u32>]) -> usize {
    let r = t.reader();
    let g = r.pin();
    let mut bad = 0;
    for (i, w) in want.iter().enumerate() {
        let i = i as u32;
        let got = g.top(lse(FIRST + i)).swap_one(lse(FIRST + i));
        let expect = w.map(|generation| {
            let out = FIRST + (i + generation * 7919) % N;
            (out << 12 | 1 << 8 | 63, i + generation * N)
        });
        if got != expect {
            bad += 1;
            if bad <= 5 {
                eprintln!("label {}: got {got:x?}, want {expect:x?}", FIRST + i);
            }
        }
    }
    bad
}

#[test]
fn a_million_labels_each_its_own_entry() {
    let mut t = LabelTable::with_capacity(N as usize + 4096);
    let mut want: Vec<Option<u32>> = vec![None; N as usize];
    for i in 0..N {
        t.add(FIRST + i, true, action(i, 0)).expect("add");
        want[i as usize] = Some(0);
    }
    assert_eq!(
        t.len(),
        N as usize + t.iter().filter(|e| e.0 < FIRST).count()
    );
    assert_eq!(wrong(&t, &want), 0, "loaded");
    // Every other entry replaced (new out-label and adjacency), every third
    // withdrawn: the replaced slots come back through the grace period.
    for i in (0..N).step_by(2) {
        t.add(FIRST + i, true, action(i, 1)).expect("replace");
        want[i as usize] = Some(1);
        if i % 4096 == 0 {
            t.reclaim();
        }
    }
    for i in (0..N).step_by(3) {
        t.remove(FIRST + i, true).expect("remove");
        want[i as usize] = None;
    }
    assert_eq!(wrong(&t, &want), 0, "replaced and withdrawn");
    for i in (0..N).step_by(3) {
        t.add(FIRST + i, true, action(i, 2)).expect("add back");
        want[i as usize] = Some(2);
    }
    assert_eq!(wrong(&t, &want), 0, "added back");
}

#[test]
fn past_its_capacity_a_label_is_refused_and_nothing_moves() {
    let mut t = LabelTable::with_capacity(1 << 12);
    let mut want: Vec<Option<u32>> = vec![None; 1 << 13];
    let mut refused = 0;
    for i in 0..1u32 << 13 {
        match t.add(FIRST + i, true, action(i, 0)) {
            Ok(()) => want[i as usize] = Some(0),
            Err(e) => {
                assert_eq!(e, ConfigError::TableFull);
                refused += 1;
            }
        }
    }
    assert!(refused > 1 << 12 && refused < 1 << 13, "{refused} refused");
    assert_eq!(wrong(&t, &want), 0);
}

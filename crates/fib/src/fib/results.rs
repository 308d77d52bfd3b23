//! Path lists: each owns a result id (what a lookup returns), its weighted legs and
//! the ECMP bucket table that maps a flow hash to one of them.

use super::*;

/// Bucket count for `n` legs: a power of two, stable while `n` stays in one range.
fn bucket_count(n: usize) -> usize {
    if n <= 1 {
        1
    } else {
        (n.next_power_of_two() * BUCKETS_PER_LEG).clamp(64, MAX_BUCKETS)
    }
}

/// Fills `b` buckets with legs in proportion to their weights (largest remainder),
/// keeping every bucket of `prev` whose leg is still wanted, so flows on unchanged
/// legs stay where they are (minimal disruption).
fn assign_buckets(prev: &[u32], legs: &[(u32, u64)], b: usize) -> Vec<u32> {
    let total: u128 = legs.iter().map(|l| u128::from(l.1)).sum::<u128>().max(1);
    let mut target: Vec<usize> = Vec::with_capacity(legs.len());
    let mut rems: Vec<(u128, usize)> = Vec::with_capacity(legs.len());
    for (i, &(_, w)) in legs.iter().enumerate() {
        let x = u128::from(w) * b as u128;
        target.push((x / total) as usize);
        rems.push((x % total, i));
    }
    let mut left = b - target.iter().sum::<usize>();
    rems.sort_by(|a, c| c.0.cmp(&a.0).then(a.1.cmp(&c.1)));
    for &(_, i) in &rems {
        if left == 0 {
            break;
        }
        target[i] += 1;
        left -= 1;
    }
    let mut count = vec![0usize; legs.len()];
    let mut out = vec![u32::MAX; b];
    if prev.len() == b {
        let pos: HashMap<u32, usize> = legs.iter().enumerate().map(|(i, l)| (l.0, i)).collect();
        for (k, &p) in prev.iter().enumerate() {
            if let Some(&i) = pos.get(&p) {
                if count[i] < target[i] {
                    out[k] = p;
                    count[i] += 1;
                }
            }
        }
    }
    // Hand out the free buckets round-robin among legs below their target.
    let mut i = 0usize;
    for o in out.iter_mut().filter(|o| **o == u32::MAX) {
        let mut guard = 0;
        while count[i] >= target[i] && guard <= legs.len() {
            i = (i + 1) % legs.len();
            guard += 1;
        }
        *o = legs[i].0;
        count[i] += 1;
        i = (i + 1) % legs.len();
    }
    out
}

impl Fib {
    pub(super) fn pl(&self, id: u32) -> Option<&PathList> {
        self.pls.get(id as usize).and_then(Option::as_ref)
    }

    /// The path list for `key` (one more route on it), made if new; a new one
    /// past the result limit is refused and counted.
    pub(super) fn pl_acquire(&mut self, key: PlKey, seed: Option<u32>) -> Result<u32, FibError> {
        let key = PlIndexKey::from(key);
        if let Some(&id) = self.pl_index.get(&key) {
            if let Some(h) = self.pl_hot.get_mut(id as usize) {
                h.0 += 1;
            }
            return Ok(id);
        }
        if self.pl_index.len() >= self.result_limit {
            self.results_refused += 1;
            return Err(FibError::ResultsFull(self.result_limit));
        }
        let fwd = self.alloc(Arr::Lb, 1);
        let pl = PathList {
            key: key.key(),
            fwd,
            legs: Vec::new(),
            buckets: Vec::new(),
            bucket_base: 0,
            seed: seed
                .and_then(|s| self.pl(s))
                .map(|s| s.buckets.clone())
                .unwrap_or_default(),
            via: Vec::new(),
            dependents: HashSet::default(),
        };
        let id = if let Some(i) = self.pl_free.pop() {
            self.pls[i as usize] = Some(pl);
            i
        } else {
            self.pls.push(Some(pl));
            (self.pls.len() - 1) as u32
        };
        if self.pl_hot.len() <= id as usize {
            self.pl_hot.resize(id as usize + 1, (0, 0));
        }
        self.pl_hot[id as usize] = (1, fwd);
        self.pl_index.insert(key, id);
        self.recompute(id);
        self.run_work();
        Ok(id)
    }

    pub(super) fn pl_release(&mut self, id: u32) {
        let Some(h) = self.pl_hot.get_mut(id as usize) else {
            return;
        };
        if h.0 == 0 {
            return; // not in use
        }
        h.0 -= 1;
        if h.0 > 0 {
            return;
        }
        let Some(p) = self.pls.get_mut(id as usize).and_then(Option::take) else {
            return;
        };
        self.pl_free.push(id);
        self.pl_index.remove(&PlIndexKey::from(p.key));
        self.unlink_via(id, &p.via);
        self.retire(Arr::Lb, p.fwd, 1);
        if !p.buckets.is_empty() {
            self.retire(Arr::Buckets, p.bucket_base, p.buckets.len());
        }
        for (leg, _) in p.legs {
            self.leg_release(leg);
        }
        for d in p.dependents {
            self.push_work(d);
        }
        self.run_work();
    }

    /// Re-resolves path list `id`, rewrites its buckets, and queues its dependents if
    /// its legs changed.
    pub(super) fn recompute(&mut self, id: u32) {
        let Some(p) = self.pl(id) else {
            return;
        };
        let table = p.key.table;
        let kind = p.key.kind.clone();
        let mut specs: Vec<(LegKey, u64)> = Vec::new();
        let mut via: Vec<(RouteKey, u32)> = Vec::new();
        let special = |action| LegKey {
            action,
            ifindex: 0,
            nbr: None,
            labels: Vec::new(),
        };
        match &kind {
            RouteKind::Blackhole => specs.push((special(Action::Drop), SCALE)),
            RouteKind::Unreachable => specs.push((special(Action::Unreachable), SCALE)),
            RouteKind::Prohibit => specs.push((special(Action::Prohibit), SCALE)),
            RouteKind::Local => specs.push((special(Action::Local), SCALE)),
            RouteKind::Connected { ifindex } => specs.push((
                LegKey {
                    action: Action::Glean,
                    ifindex: *ifindex,
                    nbr: None,
                    labels: Vec::new(),
                },
                SCALE,
            )),
            RouteKind::Paths(ps) => {
                for path in ps {
                    self.resolve_path(id, table, path, &mut specs, &mut via);
                }
            }
        }
        // Merge equal legs.
        specs.sort_by(|a, b| format_key(&a.0).cmp(&format_key(&b.0)));
        let mut merged: Vec<(LegKey, u64)> = Vec::with_capacity(specs.len());
        for (k, w) in specs {
            match merged.last_mut() {
                Some(last) if last.0 == k => last.1 += w,
                _ => merged.push((k, w)),
            }
        }
        merged.truncate(MAX_BUCKETS);
        if merged.is_empty() {
            merged.push((special(Action::NoRoute), SCALE));
        }
        let mut legs: Vec<(u32, u64)> = Vec::with_capacity(merged.len());
        for (k, w) in merged {
            legs.push((self.leg_acquire(k), w));
        }
        legs.sort_unstable();
        let Some(p) = self.pl(id) else {
            return;
        };
        let nb = bucket_count(legs.len());
        let prev = if p.buckets.is_empty() {
            &p.seed
        } else {
            &p.buckets
        };
        let buckets = assign_buckets(prev, &legs, nb);
        let (fwd, old_base, old_buckets) = (p.fwd, p.bucket_base, p.buckets.clone());
        let base = if old_buckets.len() == nb {
            let pl = &self.planes;
            for (k, (&new, &old)) in buckets.iter().zip(&old_buckets).enumerate() {
                if new != old {
                    pl.buckets[old_base as usize + k].store(new, Ordering::Release);
                }
            }
            old_base
        } else {
            let base = self.alloc(Arr::Buckets, nb);
            let pl = &self.planes;
            for (k, &b) in buckets.iter().enumerate() {
                pl.buckets[base as usize + k].store(b, Ordering::Relaxed);
            }
            let h = ((nb as u64 - 1) << 32) | u64::from(base);
            pl.lb[fwd as usize].store(h, Ordering::Release);
            if !old_buckets.is_empty() {
                self.retire(Arr::Buckets, old_base, old_buckets.len());
            }
            base
        };
        // Swap the dependency edges.
        let old_via = self.pl(id).map(|p| p.via.clone()).unwrap_or_default();
        self.unlink_via(id, &old_via);
        for (rk, y) in &via {
            self.route_deps.entry(*rk).or_default().insert(id);
            if let Some(Some(yp)) = self.pls.get_mut(*y as usize) {
                yp.dependents.insert(id);
            }
        }
        let Some(Some(p)) = self.pls.get_mut(id as usize) else {
            return;
        };
        let old_legs = std::mem::replace(&mut p.legs, legs);
        let changed = old_legs != p.legs;
        p.buckets = buckets;
        p.bucket_base = base;
        p.seed = Vec::new();
        p.via = via;
        let deps: Vec<u32> = if changed {
            p.dependents.iter().copied().collect()
        } else {
            Vec::new()
        };
        for (leg, _) in old_legs {
            self.leg_release(leg);
        }
        for d in deps {
            self.push_work(d);
        }
    }
}

/// A total order on leg keys for merging (Action has no Ord).
fn format_key(k: &LegKey) -> (u8, u32, Option<IpAddr>, &[u32]) {
    (k.action as u8, k.ifindex, k.nbr, &k.labels)
}

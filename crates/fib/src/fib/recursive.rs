//! Recursive resolution: a gateway without an interface resolves through the longest
//! route covering it, and a change of that route recomputes the path lists that
//! depend on it.

use super::*;

impl Fib {
    pub(super) fn unlink_via(&mut self, id: u32, via: &[(RouteKey, u32)]) {
        for (rk, y) in via {
            if let Some(v) = self.route_deps.get_mut(rk) {
                v.remove(&id);
                if v.is_empty() {
                    self.route_deps.remove(rk);
                }
            }
            if let Some(Some(yp)) = self.pls.get_mut(*y as usize) {
                yp.dependents.remove(&id);
            }
        }
    }

    pub(super) fn push_work(&mut self, id: u32) {
        if self.in_work.insert(id) {
            self.work.push(id);
        }
    }

    /// Queues the path lists that resolved through route `rk`; with `inside`, only
    /// those with a recursive gateway inside that prefix.
    pub(super) fn queue_route_deps(&mut self, rk: RouteKey, inside: Option<IpPrefix>) {
        let Some(list) = self.route_deps.get(&rk) else {
            return;
        };
        let list: Vec<u32> = list.iter().copied().collect();
        for id in list {
            let hit = match (inside, self.pl(id)) {
                (None, _) => true,
                (Some(pfx), Some(p)) => match &p.key.kind {
                    RouteKind::Paths(ps) => ps.iter().any(|x| match x.via {
                        Via::Gateway(gw) => x.ifindex.is_none() && pfx.contains(gw.into()),
                        Via::Gateway6(gw) => x.ifindex.is_none() && pfx.contains(gw.into()),
                        Via::Attached => false,
                    }),
                    _ => false,
                },
                _ => false,
            };
            if hit {
                self.push_work(id);
            }
        }
    }

    pub(super) fn run_work(&mut self) {
        // Resolution never follows a cycle (see `depends_on`), so this terminates; the
        // bound only protects against a bug turning into a hang.
        let mut budget = 64 * (self.pls.len() + 16);
        while let Some(id) = self.work.pop() {
            self.in_work.remove(&id);
            if budget == 0 {
                self.work.clear();
                self.in_work.clear();
                break;
            }
            budget -= 1;
            if self.pl(id).is_some() {
                self.recompute(id);
            }
        }
    }

    /// True if path list `a` resolves (transitively) through path list `target`.
    fn depends_on(&self, a: u32, target: u32, depth: usize) -> bool {
        if a == target {
            return true;
        }
        if depth >= MAX_DEPTH {
            return true; // too deep: treat as a cycle
        }
        self.pl(a).is_some_and(|p| {
            p.via
                .iter()
                .any(|&(_, y)| y != NIL && self.depends_on(y, target, depth + 1))
        })
    }

    /// Resolves one path of path list `id` into weighted legs.
    pub(super) fn resolve_path(
        &self,
        id: u32,
        table: TableId,
        p: &Path,
        specs: &mut Vec<(LegKey, u64)>,
        via: &mut Vec<(RouteKey, u32)>,
    ) {
        let w = u64::from(p.weight) * SCALE;
        let fwd = |ifindex, nbr| LegKey {
            action: Action::Forward,
            ifindex,
            nbr: Some(nbr),
            labels: p.labels.clone(),
        };
        match (p.via, p.ifindex) {
            (Via::Gateway(gw), Some(i)) => specs.push((fwd(i, IpAddr::V4(gw)), w)),
            (Via::Gateway6(gw), Some(i)) => specs.push((fwd(i, IpAddr::V6(gw)), w)),
            (Via::Attached, Some(i)) => specs.push((
                LegKey {
                    action: Action::Glean,
                    ifindex: i,
                    nbr: None,
                    labels: p.labels.clone(),
                },
                w,
            )),
            (Via::Gateway(_) | Via::Gateway6(_), None) => {
                let table = p.via_table.unwrap_or(table);
                let Some(t) = self.tables.get(&table) else {
                    return;
                };
                let skip = |rp| self.depends_on(rp, id, 0);
                let (gw, hit) = match p.via {
                    Via::Gateway(gw) => {
                        let g = u32::from(gw);
                        let hit = t.trie.longest_match(g, 32, skip).map(|(rpl, rlen)| {
                            let rk = RouteKey::v4(table, g & crate::model::mask(rlen), rlen);
                            (rpl, rk)
                        });
                        (IpAddr::V4(gw), hit.ok_or(RouteKey::v4(table, 0, 0)))
                    }
                    Via::Gateway6(gw) => {
                        let g = u128::from(gw);
                        let hit = t
                            .v6
                            .longest_match(g, 128, skip)
                            .map(|(rpl, rlen)| (rpl, RouteKey::v6(table, g & mask6(rlen), rlen)));
                        (IpAddr::V6(gw), hit.ok_or(RouteKey::v6(table, 0, 0)))
                    }
                    Via::Attached => return,
                };
                let (rpl, rk) = match hit {
                    Ok(h) => h,
                    Err(unresolved) => {
                        via.push((unresolved, NIL));
                        return;
                    }
                };
                via.push((rk, rpl));
                let Some(y) = self.pl(rpl) else {
                    return;
                };
                match &y.key.kind {
                    RouteKind::Connected { ifindex } => {
                        specs.push((fwd(*ifindex, gw), w));
                    }
                    RouteKind::Paths(_) => {
                        let sum: u128 = y.legs.iter().map(|l| u128::from(l.1)).sum::<u128>().max(1);
                        for &(leg, lw) in &y.legs {
                            let Some(Some(k)) = self.leg_keys.get(leg as usize) else {
                                continue;
                            };
                            let (ifindex, nbr) = match k.action {
                                Action::Forward => (k.ifindex, k.nbr),
                                Action::Glean => (k.ifindex, Some(gw)),
                                _ => continue,
                            };
                            // Outer labels (from the route resolved through) on top.
                            let mut labels = k.labels.clone();
                            labels.extend_from_slice(&p.labels);
                            if labels.len() > MAX_LABELS {
                                continue;
                            }
                            let share = (u128::from(w) * u128::from(lw) / sum).max(1) as u64;
                            specs.push((
                                LegKey {
                                    action: Action::Forward,
                                    ifindex,
                                    nbr,
                                    labels,
                                },
                                share,
                            ));
                        }
                    }
                    _ => {}
                }
            }
            // Rejected by validation.
            (_, None) => {}
        }
    }
}

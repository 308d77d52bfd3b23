//! Label entries: `label add|replace|del|show`.

use super::*;

impl RouterApi<'_> {
    /// Runs a command of this domain (see [`Domain`]).
    pub(super) fn run_labels(&mut self, cmd: Command) -> Result<Value, ApiError> {
        match cmd {
            Command::LabelAdd {
                label,
                eos,
                spec: s,
                replace,
            } => {
                // Entries learned from a routing daemon do not count: dpctl's
                // takes precedence over them.
                let learned = self
                    .ctl
                    .label_source(label, eos)
                    .is_some_and(RouteSource::is_learned);
                if !replace && !learned && self.ctl.labels().get(label, eos).is_some() {
                    return Err(ApiError::Exists(format!(
                        "label {label} {} exists; use `label replace` to change it, or `label del` first",
                        eos_word(eos)
                    )));
                }
                spec::install_label(self.ctl, RouteSource::Dpctl, label, eos, &s).map_err(
                    |source| ApiError::Resolve {
                        what: format!("label {label} {}", eos_word(eos)),
                        source,
                    },
                )?;
                Ok(Value::Null)
            }
            Command::LabelDel { label, eos, paths } => {
                if self.ctl.labels().get(label, eos).is_none() {
                    let other = self.ctl.labels().get(label, !eos).is_some();
                    return Err(ApiError::NotFound(format!(
                        "no label {label} {} ({}dpctl label show lists them)",
                        eos_word(eos),
                        if other {
                            let a = if eos { "a non-eos" } else { "an eos" };
                            format!("label {label} has only {a} entry; ")
                        } else {
                            String::new()
                        }
                    )));
                }
                let owner = self
                    .ctl
                    .label_source(label, eos)
                    .unwrap_or(RouteSource::Config);
                if owner.is_learned() {
                    return Err(ApiError::Conflict(format!(
                        "label {label} {} is learned ({}): withdraw it where it comes from",
                        eos_word(eos),
                        owner.name()
                    )));
                }
                if paths.is_empty() {
                    self.ctl.label_del_from(owner, label, eos)?;
                    return Ok(Value::Null);
                }
                // Remove only the named paths; all must exist before anything changes.
                let Some(mpls::LabelAction::Forward {
                    paths: current,
                    ttl_mode,
                }) = self.ctl.labels().get(label, eos).cloned()
                else {
                    return Err(ApiError::Refused(format!(
                        "label {label} {} has no paths to delete; delete the entry with `label del {label} {}`",
                        eos_word(eos),
                        eos_word(eos)
                    )));
                };
                // out-labels [3] and [] both mean "pop" (PHP)
                let norm = |l: &[u32]| if l == [3] { Vec::new() } else { l.to_vec() };
                let mut remaining = current;
                for v in &paths {
                    let (Some(g), Some(n)) = (v.gateway, v.interface.as_deref()) else {
                        return Err(ApiError::Syntax(cli::ParseError(
                            "a label path is via GATEWAY INTERFACE".into(),
                        )));
                    };
                    let ix = spec::ifindex(self.ctl, n)?;
                    let adj = self.ctl.fib().adjacency_id(ix, g);
                    let pos = adj.and_then(|a| {
                        remaining
                            .iter()
                            .position(|h| h.adj == a && norm(&h.out_labels) == norm(&v.out_labels))
                    });
                    match pos {
                        Some(p) => {
                            remaining.remove(p);
                        }
                        None => {
                            return Err(ApiError::NotFound(format!(
                                "label {label} {} has no path via {g} {n} out-labels {:?} (dpctl label show {label})",
                                eos_word(eos),
                                v.out_labels
                            )));
                        }
                    }
                }
                if remaining.is_empty() {
                    self.ctl.label_del_from(owner, label, eos)?;
                } else {
                    self.ctl.label_add_from(
                        owner,
                        label,
                        eos,
                        mpls::LabelAction::Forward {
                            paths: remaining,
                            ttl_mode,
                        },
                    )?;
                }
                Ok(Value::Null)
            }
            Command::LabelShow { label } => Ok(self.label_show(label)),
            other => Err(misrouted(&other)),
        }
    }

    pub(super) fn label_show(&self, only: Option<u32>) -> Value {
        let mut reader = self.ctl.fib().reader();
        let view = reader.read();
        let rows: Vec<Value> = self
            .ctl
            .labels()
            .iter()
            .filter(|(l, _, _)| only.is_none_or(|x| x == *l))
            .map(|(label, eos, a)| {
                let mut v = json!({
                    "label": label,
                    "eos": eos,
                    "source": self.ctl.label_source(label, eos).map_or("config", |s| s.name()),
                });
                let ttl = |m: &mpls::TtlMode| match m {
                    mpls::TtlMode::Uniform => "uniform",
                    mpls::TtlMode::Pipe { .. } => "pipe",
                };
                match a {
                    mpls::LabelAction::Forward { paths, ttl_mode } => {
                        v["action"] = json!("forward");
                        v["ttl_mode"] = json!(ttl(ttl_mode));
                        v["paths"] = paths
                            .iter()
                            .map(|h| {
                                let adj = view.adjacency(h.adj);
                                json!({
                                    "gateway": adj.and_then(|a| a.neighbor).map(|g| g.to_string()),
                                    "interface": adj.map(|a| self.iface_name(a.ifindex)),
                                    "out_labels": h.out_labels,
                                    "neighbor_mac": adj.filter(|a| a.complete).map(|a| mac_str(a.dst_mac)),
                                    "op": match h.out_labels.as_slice() {
                                        [] | [3] => "php",
                                        [0] | [2] => "explicit-null",
                                        _ => "swap",
                                    },
                                })
                            })
                            .collect();
                    }
                    mpls::LabelAction::Ip4Lookup { table, ttl_mode }
                    | mpls::LabelAction::Ip6Lookup { table, ttl_mode }
                    | mpls::LabelAction::IpLookup { table, ttl_mode } => {
                        v["action"] = json!(match a {
                            mpls::LabelAction::Ip6Lookup { .. } => "ip6-lookup",
                            mpls::LabelAction::IpLookup { .. } => "ip-lookup",
                            _ => "ip4-lookup",
                        });
                        // null: the receiving interface's table
                        v["table"] = json!((*table != mpls::RX_TABLE).then_some(table));
                        v["ttl_mode"] = json!(ttl(ttl_mode));
                    }
                    mpls::LabelAction::Pop { ttl_mode } => {
                        v["action"] = json!("pop");
                        v["ttl_mode"] = json!(ttl(ttl_mode));
                    }
                    mpls::LabelAction::Drop => v["action"] = json!("drop"),
                    mpls::LabelAction::Punt => v["action"] = json!("punt"),
                    mpls::LabelAction::Xconnect { pw } => {
                        v["action"] = json!("pseudowire");
                        v["pw"] = json!(self.ctl.pws().find(|p| p.1 == *pw).map(|p| p.0));
                    }
                }
                v
            })
            .collect();
        json!({ "labels": rows })
    }
}

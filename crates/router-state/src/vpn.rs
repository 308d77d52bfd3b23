//! Pseudowires (VPWS) and VRFs (named IPv4 tables).

use super::*;

impl RouterState {
    /// Adds pseudowire `name` from `source`, or replaces it: its circuit takes
    /// no IPv4 or MPLS of its own any more (it must have no address), and label
    /// `in_label` (bottom of stack) becomes its (refused if another entry has it).
    pub fn pw_add(&mut self, source: RouteSource, name: &str, pw: Pw) -> Result<(), RouterError> {
        let bad = |m: String| Err(RouterError::Pw(format!("{name}: {m}")));
        if name.is_empty() || name.len() > 32 || !name.chars().all(|c| c.is_ascii_graphic()) {
            return bad("a name is 1-32 printable characters".into());
        }
        let Some(ac) = self.iface_list.get(&pw.ac) else {
            return Err(RouterError::UnknownInterface(pw.ac));
        };
        if let Some((a, l)) = ac.addrs.first() {
            return bad(format!(
                "{} has address {a}/{l}: a circuit has none",
                ac.name
            ));
        }
        if let Some((other, _)) = self.pws.iter().find(|(n, p)| *n != name && p.2.ac == pw.ac) {
            return bad(format!("{} is the circuit of pseudowire {other}", ac.name));
        }
        if !(16..1 << 20).contains(&pw.out_label) {
            return bad(format!("out-label {} is not 16-1048575", pw.out_label));
        }
        let old = self.pws.get(name).cloned();
        let k = match &old {
            Some((k, _, _)) => *k,
            None => match (0..MAX_PWS as u32).find(|k| self.pws.values().all(|p| p.0 != *k)) {
                Some(k) => k,
                None => return bad(format!("{MAX_PWS} pseudowires at most")),
            },
        };
        let mine = |a: &mpls::LabelAction| *a == mpls::LabelAction::Xconnect { pw: k };
        if self
            .label_rib
            .winner(&(pw.in_label, true))
            .is_some_and(|w| !mine(w.value))
        {
            return bad(format!("in-label {} is in use", pw.in_label));
        }
        self.label_add_from(
            source,
            pw.in_label,
            true,
            mpls::LabelAction::Xconnect { pw: k },
        )?;
        if let Some((_, s, o)) = &old {
            if (o.in_label, *s) != (pw.in_label, source) {
                let _ = self.label_del_from(*s, o.in_label, true);
            }
        }
        self.pws.insert(name.to_string(), (k, source, pw));
        self.publish();
        Ok(())
    }

    /// Deletes pseudowire `name` (its label with it).
    pub fn pw_del(&mut self, name: &str) -> Result<Pw, RouterError> {
        let (_, source, pw) = self
            .pws
            .remove(name)
            .ok_or_else(|| RouterError::Pw(format!("{name}: no such pseudowire")))?;
        let _ = self.label_del_from(source, pw.in_label, true);
        self.publish();
        Ok(pw)
    }

    /// The pseudowires: name, index, source, configuration.
    pub fn pws(&self) -> impl Iterator<Item = (&str, u32, RouteSource, &Pw)> {
        self.pws
            .iter()
            .map(|(n, (k, s, p))| (n.as_str(), *k, *s, p))
    }

    /// Names table `table` VRF `name`, creating the table if it does not exist.
    /// A VRF is a table with a name: interfaces bound to it, its routes, the
    /// labels that look up in it. `default` is table 0's name and cannot be given.
    pub fn vrf_add(&mut self, name: &str, table: TableId) -> Result<(), RouterError> {
        let ok = !name.is_empty()
            && name.len() <= 32
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !name.chars().all(|c| c.is_ascii_digit());
        if !ok {
            return Err(RouterError::Vrf(format!(
                "bad VRF name {name:?}: 1-32 letters, digits, '-', '_' or '.', not all digits"
            )));
        }
        if name == "default" || table == 0 {
            return Err(RouterError::Vrf(
                "table 0 is the default VRF; give another name and table".into(),
            ));
        }
        match self.vrfs.get(name) {
            Some(&t) if t == table => return Ok(()),
            Some(&t) => {
                return Err(RouterError::Vrf(format!("VRF {name} is table {t}")));
            }
            None => {}
        }
        if let Some(other) = self.table_vrf(table) {
            return Err(RouterError::Vrf(format!(
                "table {table} is VRF {other} already"
            )));
        }
        if !self.fib.tables().any(|t| t == table) {
            self.fib.table_add(table)?;
            self.publish();
        }
        self.vrfs.insert(name.to_string(), table);
        Ok(())
    }

    /// Removes VRF `name` and its table (refused while the table is in use, as
    /// [`RouterState::table_del`]).
    pub fn vrf_del(&mut self, name: &str) -> Result<(), RouterError> {
        if name == "default" {
            return Err(RouterError::Vrf("the default VRF (table 0) stays".into()));
        }
        let Some(table) = self.vrf_table(name) else {
            return Err(RouterError::Vrf(self.unknown_vrf(name)));
        };
        self.vrfs.remove(name);
        if let Err(e) = self.table_del(table) {
            self.vrfs.insert(name.to_string(), table);
            return Err(e);
        }
        Ok(())
    }

    /// The table of VRF `name` (`default` is 0).
    pub fn vrf_table(&self, name: &str) -> Option<TableId> {
        if name == "default" {
            return Some(0);
        }
        self.vrfs.get(name).copied()
    }

    /// The VRF name of `table`, if it has one (`default` for 0).
    pub fn table_vrf(&self, table: TableId) -> Option<&str> {
        if table == 0 {
            return Some("default");
        }
        self.vrfs
            .iter()
            .find(|(_, t)| **t == table)
            .map(|(n, _)| n.as_str())
    }

    /// The named VRFs and their tables (without `default`).
    pub fn vrfs(&self) -> impl Iterator<Item = (&str, TableId)> + '_ {
        self.vrfs.iter().map(|(n, &t)| (n.as_str(), t))
    }

    /// "unknown VRF ... (VRFs: ...)".
    pub fn unknown_vrf(&self, name: &str) -> String {
        let mut names = vec!["default"];
        names.extend(self.vrfs.keys().map(String::as_str));
        format!("unknown VRF {name:?} (VRFs: {})", names.join(", "))
    }
}

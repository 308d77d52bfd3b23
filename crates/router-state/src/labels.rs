//! Label entries per source: the most preferred one in the label table.

use super::*;

impl RouterState {
    /// Adds or replaces the configuration file's label entry (see
    /// [`RouterState::label_add_from`]).
    pub fn label_add(
        &mut self,
        label: u32,
        eos: bool,
        action: mpls::LabelAction,
    ) -> Result<(), RouterError> {
        self.label_add_from(RouteSource::Config, label, eos, action)
    }

    /// Adds or replaces `source`'s label entry. Each source may hold one per
    /// label and eos; the most preferred source's forwards, the others wait to
    /// be revealed. Every entry, waiting or not, holds the adjacencies it names.
    /// A refused entry changes nothing.
    pub fn label_add_from(
        &mut self,
        source: RouteSource,
        label: u32,
        eos: bool,
        action: mpls::LabelAction,
    ) -> Result<(), RouterError> {
        if let Some(table) = action.lookup_table() {
            if table != mpls::RX_TABLE && !self.fib.tables().any(|t| t == table) {
                return Err(RouterError::Fib(FibError::UnknownTable(table)));
            }
        }
        mpls::LabelTable::check(label, eos, &action)?;
        let held = self.hold_adjacencies(&action)?;
        let labels = &mut self.labels;
        let r = self
            .label_rib
            .insert_with((label, eos), source, 0, action, |a| {
                labels.add(label, eos, a.clone())
            });
        if let Err(e) = r {
            self.release_adjacencies(held);
            return Err(e.into());
        }
        if let Some(old) = self.label_holds.insert((label, eos, source), held) {
            self.release_adjacencies(old);
        }
        Ok(())
    }

    /// The source whose label entry forwards.
    pub fn label_source(&self, label: u32, eos: bool) -> Option<RouteSource> {
        self.label_rib.winner(&(label, eos)).map(|w| w.source)
    }

    /// `source`'s label entry, forwarding or waiting.
    pub fn label_of(
        &self,
        source: RouteSource,
        label: u32,
        eos: bool,
    ) -> Option<&mpls::LabelAction> {
        self.label_rib.get(&(label, eos), source, 0)
    }

    /// Deletes the configuration file's label entry (see
    /// [`RouterState::label_del_from`]).
    pub fn label_del(&mut self, label: u32, eos: bool) -> Result<mpls::LabelAction, RouterError> {
        self.label_del_from(RouteSource::Config, label, eos)
    }

    /// Deletes `source`'s label entry and lets go of the adjacencies it held;
    /// the next source's entry, if any, takes its place.
    pub fn label_del_from(
        &mut self,
        source: RouteSource,
        label: u32,
        eos: bool,
    ) -> Result<mpls::LabelAction, RouterError> {
        let gone =
            self.label_rib
                .remove(&(label, eos), source, 0)
                .ok_or(RouterError::NoSuchLabel(
                    label,
                    if eos { "eos" } else { "non-eos" },
                ))?;
        if gone.was_winner {
            match self
                .label_rib
                .winner(&(label, eos))
                .map(|w| w.value.clone())
            {
                Some(next) => {
                    if self.labels.add(label, eos, next).is_err() {
                        let _ = self.labels.remove(label, eos);
                    }
                }
                None => {
                    let _ = self.labels.remove(label, eos);
                }
            }
        }
        if let Some(old) = self.label_holds.remove(&(label, eos, source)) {
            self.release_adjacencies(old);
        }
        Ok(gone.value)
    }
}

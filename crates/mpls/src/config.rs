//! What the control plane configures: label actions, TTL models, and their validation.

use crate::{MAX_ECMP_PATHS, MAX_SWAP_LABELS};
use wire::Label;

//= RFC 3443 §3: uniform and pipe (short pipe) models; the model matters where labels
//= are pushed onto an IP packet and where the last label is popped off it.
/// How TTL crosses the IP/MPLS boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TtlMode {
    /// Push copies the IPv4 TTL (already decremented by the IPv4 hop) into every
    /// label; pop copies the label TTL back into IPv4 with an incremental checksum
    /// update (RFC 1624). The LSP shows up in traceroute. The default, as in Linux
    /// (`net.mpls.ip_ttl_propagate = 1`).
    #[default]
    Uniform,
    /// Push writes a fixed TTL into the labels; pop leaves the IPv4 TTL alone. The LSP
    /// counts as one IP hop.
    Pipe {
        /// TTL written into pushed labels (1..=255).
        ttl: u8,
    },
}

//= Linux Documentation/networking/mpls-sysctl: `default_ttl` = 255, the TTL used on
//= push when `ip_ttl_propagate` is 0. (VPP uses 64, MPLS_LABEL_DEFAULT_TTL.)
/// Label TTL for [`TtlMode::Pipe`] when the operator gives none: 255, as Linux. A pipe
/// LSP hides its length from the IP TTL, so the labels get the largest budget.
pub const DEFAULT_PIPE_TTL: u8 = 255;

impl TtlMode {
    /// Pipe mode with [`DEFAULT_PIPE_TTL`].
    pub const fn pipe() -> TtlMode {
        TtlMode::Pipe {
            ttl: DEFAULT_PIPE_TTL,
        }
    }

    pub(crate) const fn code(self) -> (u32, u8) {
        match self {
            TtlMode::Uniform => (0, 0),
            TtlMode::Pipe { ttl } => (1, ttl),
        }
    }
}

/// One labelled path of a [`LabelAction::Forward`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NextHop {
    /// Adjacency id (an index into the FIB crate's adjacency table).
    pub adj: u32,
    /// Labels that replace the received top label, top first. `[3]` (implicit null)
    /// or `[]` pops it instead: penultimate hop popping. `[0]` swaps to IPv4 explicit
    /// null. Each label is 0, 2, 3 (alone) or 16..2^20.
    pub out_labels: Vec<u32>,
}

impl NextHop {
    /// A path to `adj` with `out_labels`.
    pub fn new(adj: u32, out_labels: &[u32]) -> NextHop {
        NextHop {
            adj,
            out_labels: out_labels.to_vec(),
        }
    }
}

/// What to do with packets whose top label matches an entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LabelAction {
    /// Swap the top label for `out_labels` (or pop it, for implicit null) and send to
    /// the adjacency; with several paths, ECMP by flow hash.
    Forward {
        /// One or more paths (at most [`MAX_ECMP_PATHS`]).
        paths: Vec<NextHop>,
        /// TTL model used when PHP exposes the IPv4 header.
        ttl_mode: TtlMode,
    },
    /// Pop, and look the IPv4 payload up in `table` in the same pass. Only valid for
    /// the bottom-of-stack entry.
    Ip4Lookup {
        /// IPv4 table id.
        table: u32,
        /// Whether the label TTL is copied into IPv4.
        ttl_mode: TtlMode,
    },
    /// Pop, and look the IPv6 payload up in table `table`'s IPv6 half in the same
    /// pass (6PE's per-prefix label, 6VPE's). Only valid for the bottom-of-stack
    /// entry.
    Ip6Lookup {
        /// Table id.
        table: u32,
        /// Whether the label TTL is copied into the hop limit.
        ttl_mode: TtlMode,
    },
    /// Pop, and look the payload up in `table` by its IP version (the first
    /// nibble under the label: 4 or 6; anything else is dropped): a per-VRF label
    /// for both families. Only valid for the bottom-of-stack entry.
    IpLookup {
        /// Table id.
        table: u32,
        /// Whether the label TTL is copied into IPv4 or the hop limit.
        ttl_mode: TtlMode,
    },
    /// Pop and switch on the next label. Only valid for the non-bottom-of-stack entry.
    Pop {
        /// Uniform: the popped TTL carries on to the next label; pipe: the next
        /// label's own TTL is used.
        ttl_mode: TtlMode,
    },
    /// Drop (counted as [`DropReason::Blackhole`](crate::DropReason::Blackhole)).
    Drop,
    /// Punt to the control plane.
    Punt,
    /// Pop a pseudowire's label and hand its payload (the control word, if the
    /// pseudowire has one, then an Ethernet frame) to pseudowire `pw`'s
    /// attachment circuit. Only valid for the bottom-of-stack entry.
    Xconnect {
        /// The pseudowire's index (see the dataplane's pseudowire table).
        pw: u32,
    },
}

impl LabelAction {
    /// Swap to `out_labels` towards `adj` (uniform TTL).
    pub fn swap(adj: u32, out_labels: &[u32]) -> LabelAction {
        LabelAction::Forward {
            paths: vec![NextHop::new(adj, out_labels)],
            ttl_mode: TtlMode::Uniform,
        }
    }

    /// Penultimate hop popping towards `adj` (uniform TTL).
    pub fn php(adj: u32) -> LabelAction {
        Self::swap(adj, &[Label::IMPLICIT_NULL.value()])
    }

    /// Pop and look up in IPv4 table `table` (uniform TTL).
    pub fn ip4_lookup(table: u32) -> LabelAction {
        LabelAction::Ip4Lookup {
            table,
            ttl_mode: TtlMode::Uniform,
        }
    }

    /// The table a pop-and-lookup action looks the payload up in (of either
    /// family), if it is one.
    pub fn lookup_table(&self) -> Option<u32> {
        match self {
            LabelAction::Ip4Lookup { table, .. }
            | LabelAction::Ip6Lookup { table, .. }
            | LabelAction::IpLookup { table, .. } => Some(*table),
            _ => None,
        }
    }

    /// Pop and look up in table `table`'s IPv6 half (uniform TTL).
    pub fn ip6_lookup(table: u32) -> LabelAction {
        LabelAction::Ip6Lookup {
            table,
            ttl_mode: TtlMode::Uniform,
        }
    }

    /// Pop and look up in table `table` by the payload's IP version (uniform TTL).
    pub fn ip_lookup(table: u32) -> LabelAction {
        LabelAction::IpLookup {
            table,
            ttl_mode: TtlMode::Uniform,
        }
    }
}

/// A configuration the label table refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A label value does not fit in 20 bits.
    #[error("label {0} is out of range (labels are 20 bits, at most 1048575)")]
    LabelOutOfRange(u32),
    /// In-labels 0..=15 are special-purpose; their behaviour is built in.
    #[error("in-label {0} is special-purpose (0-15) and cannot be configured")]
    ReservedInLabel(u32),
    /// Out-labels must be 0, 2, 3 or at least 16.
    #[error("out-label {0} is special-purpose; out-labels must be 0, 2, 3 or >= 16")]
    ReservedOutLabel(u32),
    /// Implicit null (3) means "pop" and cannot be stacked with other labels.
    #[error("implicit null (3) must be the only out-label")]
    ImplicitNullInStack,
    /// Too many out-labels for one path.
    #[error("{got} out-labels, at most {max} supported")]
    TooManyLabels {
        /// Labels given.
        got: usize,
        /// The limit.
        max: usize,
    },
    /// `Forward` needs at least one path.
    #[error("no paths given")]
    NoPaths,
    /// Too many ECMP paths.
    #[error("{0} paths, at most {MAX_ECMP_PATHS} supported")]
    TooManyPaths(usize),
    /// A lookup (`Ip4Lookup`, `Ip6Lookup`, `IpLookup`) on a non-bottom-of-stack
    /// entry: the payload is not IP there.
    #[error(
        "ip4-lookup, ip6-lookup and ip-lookup are only valid for the bottom-of-stack (eos) entry"
    )]
    LookupNotEos,
    /// `Xconnect` on a non-bottom-of-stack entry: a pseudowire's label is the last.
    #[error("a pseudowire's label is only valid as the bottom-of-stack (eos) entry")]
    XconnectNotEos,
    /// `Pop` (continue with the next label) on a bottom-of-stack entry: no next label.
    #[error("pop-and-continue is only valid for the non-bottom-of-stack (non-eos) entry")]
    PopOnEos,
    /// Pipe TTL 0 would make every pushed packet expire at the next hop.
    #[error("pipe TTL must be 1-255")]
    ZeroPipeTtl,
    /// The action table has no free slot left (readers may still hold old entries).
    #[error("label action table full")]
    TableFull,
    /// No entry to remove.
    #[error("no entry for label {label} {}", if *.eos { "eos" } else { "non-eos" })]
    NotFound {
        /// Label.
        label: u32,
        /// Bottom-of-stack entry or not.
        eos: bool,
    },
}

/// Checks an in-label: 16..2^20.
pub fn validate_in_label(label: u32) -> Result<Label, ConfigError> {
    let l = Label::new(label).ok_or(ConfigError::LabelOutOfRange(label))?;
    if l.is_reserved() {
        return Err(ConfigError::ReservedInLabel(label));
    }
    Ok(l)
}

/// Checks an out-label stack of at most `max` labels. Returns `true` when it means
/// "pop" (`[]` or `[3]`).
pub fn validate_out_labels(labels: &[u32], max: usize) -> Result<bool, ConfigError> {
    //= RFC 3032 §2.1, RFC 7274: of the special-purpose values only 0, 2 (explicit
    //= null) and 3 (implicit null, meaning pop) are meaningful as out-labels.
    for &v in labels {
        let l = Label::new(v).ok_or(ConfigError::LabelOutOfRange(v))?;
        if l.is_reserved()
            && l != Label::IPV4_EXPLICIT_NULL
            && l != Label::IPV6_EXPLICIT_NULL
            && l != Label::IMPLICIT_NULL
        {
            return Err(ConfigError::ReservedOutLabel(v));
        }
    }
    let has_imp_null = labels.contains(&Label::IMPLICIT_NULL.value());
    if has_imp_null && labels.len() > 1 {
        return Err(ConfigError::ImplicitNullInStack);
    }
    if labels.len() > max {
        return Err(ConfigError::TooManyLabels {
            got: labels.len(),
            max,
        });
    }
    Ok(labels.is_empty() || has_imp_null)
}

pub(crate) fn validate_mode(m: TtlMode) -> Result<(), ConfigError> {
    match m {
        TtlMode::Pipe { ttl: 0 } => Err(ConfigError::ZeroPipeTtl),
        _ => Ok(()),
    }
}

/// Checks an action for entry (label, eos) without installing it.
pub fn validate_action(eos: bool, action: &LabelAction) -> Result<(), ConfigError> {
    match action {
        LabelAction::Forward { paths, ttl_mode } => {
            validate_mode(*ttl_mode)?;
            if paths.is_empty() {
                return Err(ConfigError::NoPaths);
            }
            if paths.len() > MAX_ECMP_PATHS {
                return Err(ConfigError::TooManyPaths(paths.len()));
            }
            for p in paths {
                validate_out_labels(&p.out_labels, MAX_SWAP_LABELS)?;
            }
            Ok(())
        }
        LabelAction::Ip4Lookup { ttl_mode, .. }
        | LabelAction::Ip6Lookup { ttl_mode, .. }
        | LabelAction::IpLookup { ttl_mode, .. } => {
            validate_mode(*ttl_mode)?;
            if eos {
                Ok(())
            } else {
                Err(ConfigError::LookupNotEos)
            }
        }
        LabelAction::Pop { ttl_mode } => {
            validate_mode(*ttl_mode)?;
            if eos {
                Err(ConfigError::PopOnEos)
            } else {
                Ok(())
            }
        }
        LabelAction::Drop | LabelAction::Punt => Ok(()),
        LabelAction::Xconnect { .. } if eos => Ok(()),
        LabelAction::Xconnect { .. } => Err(ConfigError::XconnectNotEos),
    }
}

// Keep the constant referenced for rustdoc and for the push limit check.

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_out_labels() {
        assert_eq!(validate_out_labels(&[100], 14), Ok(false));
        assert_eq!(validate_out_labels(&[0], 14), Ok(false));
        assert_eq!(validate_out_labels(&[2], 14), Ok(false));
        assert_eq!(validate_out_labels(&[3], 14), Ok(true));
        assert_eq!(validate_out_labels(&[], 14), Ok(true));
        assert_eq!(validate_out_labels(&[16, 0], 14), Ok(false));
        for r in [1, 4, 5, 6, 7, 8, 12, 13, 14, 15] {
            assert_eq!(
                validate_out_labels(&[r], 14),
                Err(ConfigError::ReservedOutLabel(r))
            );
        }
        assert_eq!(
            validate_out_labels(&[1 << 20], 14),
            Err(ConfigError::LabelOutOfRange(1 << 20))
        );
        assert_eq!(
            validate_out_labels(&[3, 100], 14),
            Err(ConfigError::ImplicitNullInStack)
        );
        assert_eq!(
            validate_out_labels(&[16; 15], 14),
            Err(ConfigError::TooManyLabels { got: 15, max: 14 })
        );
    }

    #[test]
    fn test_in_labels() {
        assert!(validate_in_label(16).is_ok());
        assert!(validate_in_label((1 << 20) - 1).is_ok());
        for r in 0..16 {
            assert_eq!(validate_in_label(r), Err(ConfigError::ReservedInLabel(r)));
        }
        assert_eq!(
            validate_in_label(1 << 20),
            Err(ConfigError::LabelOutOfRange(1 << 20))
        );
    }

    #[test]
    fn test_actions() {
        assert_eq!(
            validate_action(false, &LabelAction::ip4_lookup(0)),
            Err(ConfigError::LookupNotEos)
        );
        assert_eq!(
            validate_action(
                true,
                &LabelAction::Pop {
                    ttl_mode: TtlMode::Uniform
                }
            ),
            Err(ConfigError::PopOnEos)
        );
        assert_eq!(
            validate_action(
                true,
                &LabelAction::Forward {
                    paths: vec![],
                    ttl_mode: TtlMode::Uniform
                }
            ),
            Err(ConfigError::NoPaths)
        );
        assert_eq!(
            validate_action(
                true,
                &LabelAction::Ip4Lookup {
                    table: 0,
                    ttl_mode: TtlMode::Pipe { ttl: 0 }
                }
            ),
            Err(ConfigError::ZeroPipeTtl)
        );
        assert!(validate_action(true, &LabelAction::swap(1, &[100])).is_ok());
        let e = ConfigError::NotFound {
            label: 100,
            eos: true,
        }
        .to_string();
        assert_eq!(e, "no entry for label 100 eos");
    }
}

//! Pushing labels onto IPv4 packets and popping them off, in place in a frame buffer
//! with headroom.
//!
//! Offsets are layer-3 offsets: `off` is where the label stack (or the IPv4 header)
//! starts in `buf`, after whatever L2 header the frame had. A push writes `4 × N`
//! bytes into `buf[off - 4N..off]` (the headroom, for a DPDK mbuf the space in front of
//! `data_off`) and returns the new offset; a pop returns `off + 4`. The L2 header for
//! the next hop is then written in front of the new offset with the returned
//! EtherType. Nothing is moved and nothing allocates.

use crate::config::{TtlMode, validate_mode, validate_out_labels};
use crate::{ConfigError, DropReason, MAX_LABELS, Rewrite};
use wire::{EtherType, Label, checksum};

/// Reads the big-endian word at `at`, if the buffer holds it.
#[inline(always)]
pub(crate) fn read_word(buf: &[u8], at: usize) -> Option<u32> {
    let b = buf.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Writes a big-endian word at `at`; the caller has checked the bounds.
#[inline(always)]
pub(crate) fn write_word(buf: &mut [u8], at: usize, w: u32) {
    if let Some(b) = buf.get_mut(at..at + 4) {
        b.copy_from_slice(&w.to_be_bytes());
    }
}

const S_BIT: u32 = 0x100;

//= RFC 3443 §3.1 (uniform): on pop the TTL of the exposed IP header is set from the
//= label TTL; the IPv4 checksum is then fixed with RFC 1624 equation 3.
/// Validates the IPv4 header exposed at `ip` and, for the uniform model, sets its TTL
/// to `ttl` with an incremental checksum update.
#[inline(always)]
pub(crate) fn dispose_ip4(
    buf: &mut [u8],
    ip: usize,
    ttl: u8,
    uniform: bool,
) -> Result<(), DropReason> {
    let Some(h) = buf.get_mut(ip..ip + wire::ipv4::HEADER_LEN) else {
        return Err(DropReason::Truncated);
    };
    match h[0] >> 4 {
        4 => {}
        6 => return Err(DropReason::Ip6NotSupported),
        _ => return Err(DropReason::NotIpv4),
    }
    if uniform && h[8] != ttl {
        let old = u16::from_be_bytes([h[8], h[9]]);
        let new = u16::from_be_bytes([ttl, h[9]]);
        let c = checksum::update_u16(u16::from_be_bytes([h[10], h[11]]), old, new);
        h[8] = ttl;
        h[10..12].copy_from_slice(&c.to_be_bytes());
    }
    Ok(())
}

/// A label stack to push onto IPv4 packets: what an IPv4 route with out-labels holds.
///
/// Built once by the control plane ([`Imposition::new`] validates the labels), copied
/// into the FIB's route/adjacency data, and applied per packet by
/// [`push_ip4`](Imposition::push_ip4). Labels are kept pre-encoded (label and S bit);
/// the packet path only ORs in TC and TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Imposition {
    words: [u32; MAX_LABELS],
    len: u8,
    mode: TtlMode,
}

impl Imposition {
    /// An imposition of `labels` (top first, at most [`MAX_LABELS`]), each 0, 2 or
    /// ≥ 16. `[]` or `[3]` (implicit null) pushes nothing: the route forwards plain
    /// IPv4.
    pub fn new(labels: &[u32], mode: TtlMode) -> Result<Imposition, ConfigError> {
        validate_mode(mode)?;
        let pop = validate_out_labels(labels, MAX_LABELS)?;
        let mut words = [0u32; MAX_LABELS];
        let n = if pop { 0 } else { labels.len() };
        for (i, &l) in labels.iter().take(n).enumerate() {
            words[i] = Label::from_bits(l).value() << 12;
        }
        //= RFC 3032 §2.1: S is set in the last entry of the stack only.
        if n > 0 {
            words[n - 1] |= S_BIT;
        }
        Ok(Imposition {
            words,
            len: n as u8,
            mode,
        })
    }

    /// Number of labels pushed.
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether nothing is pushed.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The TTL model.
    pub const fn ttl_mode(&self) -> TtlMode {
        self.mode
    }

    /// The labels, top first.
    pub fn labels(&self) -> impl Iterator<Item = Label> + '_ {
        self.words[..self.len()]
            .iter()
            .map(|w| Label::from_bits(w >> 12))
    }

    /// Bytes of headroom a push needs.
    pub const fn headroom(&self) -> usize {
        self.len as usize * wire::mpls::LSE_LEN
    }

    /// Pushes the labels in front of the IPv4 header at `off`.
    ///
    /// Call after the IPv4 hop is done (TTL checked and decremented, e.g. with
    /// `wire::Ipv4Packet::decrement_ttl`): uniform copies that TTL — the received TTL
    /// − 1 — and the DSCP class-selector bits (DSCP >> 3, the precedence, as VPP's
    /// uniform imposition does) into every label; pipe writes the configured TTL and
    /// TC 0.
    /// Returns the new offset (`off − 4N`) and EtherType MPLS (IPv4 when nothing is
    /// pushed). Errors: `Truncated` (no IPv4 header at `off`), `NoHeadroom`.
    #[inline]
    pub fn push_ip4(&self, buf: &mut [u8], off: usize) -> Result<Rewrite, DropReason> {
        let n = self.len();
        let Some(ip) = buf.get(off..off + wire::ipv4::HEADER_LEN) else {
            return Err(DropReason::Truncated);
        };
        let tail = match self.mode {
            TtlMode::Uniform => (u32::from(ip[1] >> 5) << 9) | u32::from(ip[8]),
            TtlMode::Pipe { ttl } => u32::from(ttl),
        };
        if n == 0 {
            return Ok(Rewrite {
                off,
                ethertype: EtherType::Ipv4,
            });
        }
        self.write(buf, off, tail)
    }

    /// Pushes the labels on top of an existing label stack at `off` (hierarchical LSP,
    /// swap-and-push): every pushed entry gets S = 0, traffic class `tc` and TTL `ttl`.
    #[inline]
    pub fn push_mpls(
        &self,
        buf: &mut [u8],
        off: usize,
        tc: u8,
        ttl: u8,
    ) -> Result<Rewrite, DropReason> {
        let n = self.len();
        if n == 0 {
            return Ok(Rewrite {
                off,
                ethertype: EtherType::Mpls,
            });
        }
        if buf.len() < off + 4 {
            return Err(DropReason::Truncated);
        }
        // Clear the S bit of the last pushed entry: the existing stack is below.
        let start = off.checked_sub(4 * n).ok_or(DropReason::NoHeadroom)?;
        let tail = (u32::from(tc & 7) << 9) | u32::from(ttl);
        let Some(dst) = buf.get_mut(start..off) else {
            return Err(DropReason::NoHeadroom);
        };
        for (d, w) in dst.chunks_exact_mut(4).zip(&self.words[..n]) {
            d.copy_from_slice(&((w & !S_BIT) | tail).to_be_bytes());
        }
        Ok(Rewrite {
            off: start,
            ethertype: EtherType::Mpls,
        })
    }

    #[inline(always)]
    fn write(&self, buf: &mut [u8], off: usize, tail: u32) -> Result<Rewrite, DropReason> {
        let n = self.len();
        let start = off.checked_sub(4 * n).ok_or(DropReason::NoHeadroom)?;
        let Some(dst) = buf.get_mut(start..off) else {
            return Err(DropReason::NoHeadroom);
        };
        for (d, w) in dst.chunks_exact_mut(4).zip(&self.words[..n]) {
            d.copy_from_slice(&(w | tail).to_be_bytes());
        }
        Ok(Rewrite {
            off: start,
            ethertype: EtherType::Mpls,
        })
    }
}

/// Pops the top label at `off` (egress disposition, no TTL decrement).
///
/// With S = 0 the next entry is exposed (uniform: it takes the popped TTL) and the
/// EtherType stays MPLS. With S = 1 the payload must be IPv4 (uniform: it takes the
/// label TTL, checksum updated incrementally) and the EtherType becomes IPv4.
/// Errors: `Truncated`, `Ip6NotSupported`, `NotIpv4`.
#[inline]
pub fn pop(buf: &mut [u8], off: usize, mode: TtlMode) -> Result<Rewrite, DropReason> {
    let Some(w) = read_word(buf, off) else {
        return Err(DropReason::Truncated);
    };
    let ttl = w as u8;
    let uniform = matches!(mode, TtlMode::Uniform);
    let next = off + 4;
    if w & S_BIT == 0 {
        let Some(nw) = read_word(buf, next) else {
            return Err(DropReason::Truncated);
        };
        if uniform {
            write_word(buf, next, (nw & !0xff) | u32::from(ttl));
        }
        Ok(Rewrite {
            off: next,
            ethertype: EtherType::Mpls,
        })
    } else {
        dispose_ip4(buf, next, ttl, uniform)?;
        Ok(Rewrite {
            off: next,
            ethertype: EtherType::Ipv4,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // IPv4 header only (checksum valid): 16.0.0.1 -> 48.0.0.1 UDP TTL 63 DSCP 46 (EF).
    fn ip_header() -> [u8; 20] {
        let mut h = [
            0x45, 0xb8, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x3f, 0x11, 0x00, 0x00, 0x10, 0x00,
            0x00, 0x01, 0x30, 0x00, 0x00, 0x01,
        ];
        let c = checksum::checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }

    #[test]
    fn test_push_two_uniform() {
        let imp = Imposition::new(&[100, 200], TtlMode::Uniform).unwrap();
        let mut buf = [0u8; 28];
        buf[8..].copy_from_slice(&ip_header());
        let r = imp.push_ip4(&mut buf, 8).unwrap();
        assert_eq!(
            r,
            Rewrite {
                off: 0,
                ethertype: EtherType::Mpls
            }
        );
        // 100 TC 5 S0 TTL 63; 200 TC 5 S1 TTL 63
        assert_eq!(&buf[..8], &[0x00, 0x06, 0x4a, 0x3f, 0x00, 0x0c, 0x8b, 0x3f]);
    }

    #[test]
    fn test_push_pipe_and_empty() {
        let imp = Imposition::new(&[100], TtlMode::pipe()).unwrap();
        let mut buf = [0u8; 24];
        buf[4..].copy_from_slice(&ip_header());
        imp.push_ip4(&mut buf, 4).unwrap();
        assert_eq!(&buf[..4], &[0x00, 0x06, 0x41, 0xff]);
        let none = Imposition::new(&[3], TtlMode::Uniform).unwrap();
        assert!(none.is_empty());
        assert_eq!(
            none.push_ip4(&mut buf, 4),
            Ok(Rewrite {
                off: 4,
                ethertype: EtherType::Ipv4
            })
        );
    }

    #[test]
    fn test_push_errors() {
        let imp = Imposition::new(&[100, 200], TtlMode::Uniform).unwrap();
        let mut buf = [0u8; 24];
        buf[4..].copy_from_slice(&ip_header());
        assert_eq!(imp.push_ip4(&mut buf, 4), Err(DropReason::NoHeadroom));
        assert_eq!(imp.push_ip4(&mut buf[..20], 4), Err(DropReason::Truncated));
        assert_eq!(
            Imposition::new(&[1], TtlMode::Uniform),
            Err(ConfigError::ReservedOutLabel(1))
        );
        assert!(Imposition::new(&[16; MAX_LABELS], TtlMode::Uniform).is_ok());
        assert_eq!(
            Imposition::new(&[16; MAX_LABELS + 1], TtlMode::Uniform),
            Err(ConfigError::TooManyLabels {
                got: MAX_LABELS + 1,
                max: MAX_LABELS
            })
        );
    }

    #[test]
    fn test_pop_to_ipv4_uniform() {
        let mut buf = [0u8; 24];
        buf[..4].copy_from_slice(&[0x00, 0x06, 0x41, 0x05]); // 100 S1 TTL 5
        buf[4..].copy_from_slice(&ip_header());
        let r = pop(&mut buf, 0, TtlMode::Uniform).unwrap();
        assert_eq!(
            r,
            Rewrite {
                off: 4,
                ethertype: EtherType::Ipv4
            }
        );
        assert_eq!(buf[4 + 8], 5);
        assert!(checksum::verify(&buf[4..]));
    }

    #[test]
    fn test_pop_errors() {
        let mut buf = [0u8; 24];
        buf[..4].copy_from_slice(&[0x00, 0x06, 0x41, 0x05]);
        buf[4] = 0x60;
        assert_eq!(
            pop(&mut buf, 0, TtlMode::Uniform),
            Err(DropReason::Ip6NotSupported)
        );
        buf[4] = 0x00;
        assert_eq!(pop(&mut buf, 0, TtlMode::Uniform), Err(DropReason::NotIpv4));
        assert_eq!(
            pop(&mut buf[..10], 0, TtlMode::Uniform),
            Err(DropReason::Truncated)
        );
        assert_eq!(
            pop(&mut buf[..3], 0, TtlMode::Uniform),
            Err(DropReason::Truncated)
        );
        buf[2] = 0x40; // S = 0, next entry missing
        assert_eq!(
            pop(&mut buf[..6], 0, TtlMode::Uniform),
            Err(DropReason::Truncated)
        );
    }
}

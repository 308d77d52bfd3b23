//! MPLS label stack entries (RFC 3032 §2.1) and label stacks.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                Label                  | TC  |S|       TTL     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//! (TC was "Exp" before RFC 5462.)

use crate::{Result, WireError, be32, put32};
use core::fmt;

/// Length of one label stack entry.
pub const LSE_LEN: usize = 4;

/// A 20-bit MPLS label value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label(u32);

impl Label {
    //= RFC 3032 §2.1: "A value of 0 represents the IPv4 Explicit NULL Label."
    /// 0: IPv4 explicit null.
    pub const IPV4_EXPLICIT_NULL: Label = Label(0);
    //= RFC 3032 §2.1: "A value of 1 represents the Router Alert Label."
    /// 1: router alert.
    pub const ROUTER_ALERT: Label = Label(1);
    //= RFC 3032 §2.1: "A value of 2 represents the IPv6 Explicit NULL Label."
    /// 2: IPv6 explicit null.
    pub const IPV6_EXPLICIT_NULL: Label = Label(2);
    //= RFC 3032 §2.1: "A value of 3 represents the Implicit NULL Label ... [it] should
    //= never actually appear in the encapsulation."
    /// 3: implicit null (only ever signalled, never on the wire).
    pub const IMPLICIT_NULL: Label = Label(3);
    //= RFC 6790 §3: Entropy Label Indicator.
    /// 7: entropy label indicator; the next entry is an entropy label.
    pub const ENTROPY_LABEL_INDICATOR: Label = Label(7);
    //= RFC 5586 §4: Generic Associated Channel Label.
    /// 13: GAL.
    pub const GAL: Label = Label(13);
    //= RFC 3429: OAM Alert Label.
    /// 14: OAM alert.
    pub const OAM_ALERT: Label = Label(14);
    //= RFC 7274 §3.1: Extension Label; the next entry is an extended special-purpose
    //= label.
    /// 15: extension label.
    pub const EXTENSION: Label = Label(15);
    //= RFC 3032 §2.1: "Values 4-15 are reserved." (RFC 7274: special-purpose labels)
    /// First label value that is not special-purpose.
    pub const FIRST_UNRESERVED: Label = Label(16);
    /// Largest label value, 2^20 − 1.
    pub const MAX: Label = Label((1 << 20) - 1);

    /// A label from a 20-bit value; `None` when `v ≥ 2^20`.
    pub const fn new(v: u32) -> Option<Label> {
        if v <= Self::MAX.0 {
            Some(Label(v))
        } else {
            None
        }
    }

    /// A label from the low 20 bits of `v` (higher bits are dropped).
    pub const fn from_bits(v: u32) -> Label {
        Label(v & Self::MAX.0)
    }

    /// The 20-bit value.
    pub const fn value(self) -> u32 {
        self.0
    }

    /// Whether this is one of the special-purpose values 0..=15.
    pub const fn is_reserved(self) -> bool {
        self.0 < Self::FIRST_UNRESERVED.0
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

mod field {
    pub(super) const LSE: usize = 0;
    pub(super) const TTL: usize = 3;
}

/// Encodes a label stack entry as a host-order `u32` (label in bits 31..12, TC in
/// 11..9, S in bit 8, TTL in 7..0).
#[inline(always)]
pub const fn lse_word(label: Label, tc: u8, bos: bool, ttl: u8) -> u32 {
    (label.0 << 12) | ((tc as u32 & 7) << 9) | ((bos as u32) << 8) | ttl as u32
}

/// A view of one label stack entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lse<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Lse<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Lse<T> {
        Lse { buffer }
    }

    /// Wraps `buffer` and checks it holds 4 bytes.
    pub fn new_checked(buffer: T) -> Result<Lse<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks the buffer holds one entry.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < LSE_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The whole entry as a host-order word.
    #[inline]
    pub fn word(&self) -> u32 {
        be32(self.buffer.as_ref(), field::LSE)
    }

    /// Label.
    #[inline]
    pub fn label(&self) -> Label {
        Label(self.word() >> 12)
    }

    /// Traffic class (3 bits, RFC 5462).
    #[inline]
    pub fn tc(&self) -> u8 {
        ((self.word() >> 9) & 7) as u8
    }

    /// Bottom-of-stack bit.
    #[inline]
    pub fn bottom_of_stack(&self) -> bool {
        self.word() & 0x100 != 0
    }

    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Lse<T> {
    /// Writes the whole entry from a host-order word.
    #[inline]
    pub fn set_word(&mut self, w: u32) {
        put32(self.buffer.as_mut(), field::LSE, w)
    }

    /// Sets the label, keeping TC, S and TTL.
    #[inline]
    pub fn set_label(&mut self, l: Label) {
        let w = (self.word() & 0xfff) | (l.0 << 12);
        self.set_word(w)
    }

    /// Sets the traffic class.
    #[inline]
    pub fn set_tc(&mut self, tc: u8) {
        let w = (self.word() & !0xe00) | ((u32::from(tc) & 7) << 9);
        self.set_word(w)
    }

    /// Sets the bottom-of-stack bit.
    #[inline]
    pub fn set_bottom_of_stack(&mut self, s: bool) {
        let w = (self.word() & !0x100) | (u32::from(s) << 8);
        self.set_word(w)
    }

    /// Sets the TTL.
    #[inline]
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl
    }
}

/// Owned form of a label stack entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LseRepr {
    /// Label.
    pub label: Label,
    /// Traffic class (0..=7).
    pub tc: u8,
    /// Bottom of stack.
    pub bos: bool,
    /// Time to live.
    pub ttl: u8,
}

impl LseRepr {
    /// Decodes a host-order word.
    pub const fn from_word(w: u32) -> LseRepr {
        LseRepr {
            label: Label(w >> 12),
            tc: ((w >> 9) & 7) as u8,
            bos: w & 0x100 != 0,
            ttl: w as u8,
        }
    }

    /// Encodes as a host-order word.
    pub const fn to_word(&self) -> u32 {
        lse_word(self.label, self.tc, self.bos, self.ttl)
    }

    /// Parses an entry.
    pub fn parse<T: AsRef<[u8]>>(lse: &Lse<T>) -> Result<LseRepr> {
        lse.check_len()?;
        Ok(Self::from_word(lse.word()))
    }

    /// Length of the emitted entry.
    pub const fn buffer_len(&self) -> usize {
        LSE_LEN
    }

    /// Writes the entry.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, lse: &mut Lse<T>) {
        lse.set_word(self.to_word())
    }
}

impl fmt::Display for LseRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} tc {} {}ttl {}",
            self.label,
            self.tc,
            if self.bos { "eos " } else { "" },
            self.ttl
        )
    }
}

/// A view of a whole label stack: entries up to and including the first one with the
/// bottom-of-stack bit, followed by the payload.
///
/// `check_len` walks the stack (at most `max_depth` entries, see
/// [`LabelStack::new_checked_depth`]) and fails with `Truncated` when the buffer ends
/// before an entry with S = 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelStack<T: AsRef<[u8]>> {
    buffer: T,
    depth: usize,
}

/// Default bound on the entries [`LabelStack::new_checked`] walks.
pub const DEFAULT_MAX_DEPTH: usize = 16;

impl<T: AsRef<[u8]>> LabelStack<T> {
    /// Wraps `buffer`, trusting the caller that it holds exactly `depth` entries
    /// before the payload.
    pub const fn new_unchecked(buffer: T, depth: usize) -> LabelStack<T> {
        LabelStack { buffer, depth }
    }

    /// Wraps `buffer`, finding the bottom of stack within [`DEFAULT_MAX_DEPTH`]
    /// entries.
    pub fn new_checked(buffer: T) -> Result<LabelStack<T>> {
        Self::new_checked_depth(buffer, DEFAULT_MAX_DEPTH)
    }

    /// Wraps `buffer`, finding the bottom of stack within `max_depth` entries; a
    /// deeper stack is `BadLength`, a buffer ending first is `Truncated`.
    pub fn new_checked_depth(buffer: T, max_depth: usize) -> Result<LabelStack<T>> {
        let depth = Self::walk(buffer.as_ref(), max_depth)?;
        Ok(LabelStack { buffer, depth })
    }

    fn walk(b: &[u8], max_depth: usize) -> Result<usize> {
        let mut i = 0;
        while i < max_depth {
            let at = i * LSE_LEN;
            if b.len() < at + LSE_LEN {
                return Err(WireError::Truncated);
            }
            if b[at + 2] & 1 != 0 {
                return Ok(i + 1);
            }
            i += 1;
        }
        Err(WireError::BadLength)
    }

    /// Checks the stack recorded by the constructor still fits the buffer.
    pub fn check_len(&self) -> Result<()> {
        let n = self.depth * LSE_LEN;
        let b = self.buffer.as_ref();
        if self.depth == 0 || b.len() < n {
            return Err(WireError::Truncated);
        }
        if b[n - 2] & 1 == 0 {
            Err(WireError::BadLength)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Number of entries.
    pub const fn depth(&self) -> usize {
        self.depth
    }

    /// Length of the stack in bytes.
    pub const fn stack_len(&self) -> usize {
        self.depth * LSE_LEN
    }

    /// Entry `i` (0 is the top) as a host-order word; `None` past the bottom.
    pub fn word(&self, i: usize) -> Option<u32> {
        if i < self.depth {
            Some(be32(self.buffer.as_ref(), i * LSE_LEN))
        } else {
            None
        }
    }

    /// Entry `i` (0 is the top); `None` past the bottom.
    pub fn entry(&self, i: usize) -> Option<LseRepr> {
        self.word(i).map(LseRepr::from_word)
    }

    /// The entries, top first.
    pub fn iter(&self) -> impl Iterator<Item = LseRepr> + '_ {
        (0..self.depth).filter_map(|i| self.entry(i))
    }

    /// The raw bytes of the stack.
    pub fn stack_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[..self.stack_len()]
    }

    /// The payload after the bottom of stack.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.stack_len()..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    // Two entries: label 100 TC 5 S 0 TTL 64, label 0 TC 0 S 1 TTL 64, then 0x45.
    static STACK_BYTES: [u8; 9] = [0x00, 0x06, 0x4a, 0x40, 0x00, 0x00, 0x01, 0x40, 0x45];

    #[test]
    fn test_deconstruct() {
        let l = Lse::new_checked(&STACK_BYTES[..4]).unwrap();
        assert_eq!(l.label(), Label::new(100).unwrap());
        assert_eq!(l.tc(), 5);
        assert!(!l.bottom_of_stack());
        assert_eq!(l.ttl(), 64);
        let s = LabelStack::new_checked(&STACK_BYTES[..]).unwrap();
        assert_eq!(s.depth(), 2);
        assert_eq!(s.stack_len(), 8);
        assert_eq!(s.payload(), &[0x45]);
        let e: Vec<LseRepr> = s.iter().collect();
        assert_eq!(
            e,
            [
                LseRepr {
                    label: Label::new(100).unwrap(),
                    tc: 5,
                    bos: false,
                    ttl: 64
                },
                LseRepr {
                    label: Label::IPV4_EXPLICIT_NULL,
                    tc: 0,
                    bos: true,
                    ttl: 64
                },
            ]
        );
        assert_eq!(s.entry(2), None);
    }

    #[test]
    fn test_construct() {
        let mut b = [0u8; 8];
        LseRepr {
            label: Label::new(100).unwrap(),
            tc: 5,
            bos: false,
            ttl: 64,
        }
        .emit(&mut Lse::new_unchecked(&mut b[..4]));
        let mut l = Lse::new_unchecked(&mut b[4..]);
        l.set_label(Label::IPV4_EXPLICIT_NULL);
        l.set_tc(0);
        l.set_bottom_of_stack(true);
        l.set_ttl(64);
        assert_eq!(&b[..], &STACK_BYTES[..8]);
    }

    #[test]
    fn test_parse_truncated_and_deep() {
        assert_eq!(
            Lse::new_checked(&STACK_BYTES[..3]),
            Err(WireError::Truncated)
        );
        assert_eq!(
            LabelStack::new_checked(&STACK_BYTES[..7]),
            Err(WireError::Truncated)
        );
        assert_eq!(
            LabelStack::new_checked(&STACK_BYTES[..4]),
            Err(WireError::Truncated)
        );
        assert_eq!(
            LabelStack::new_checked_depth(&STACK_BYTES[..], 1),
            Err(WireError::BadLength)
        );
    }

    #[test]
    fn test_label_values() {
        assert_eq!(Label::new(1 << 20), None);
        assert_eq!(Label::new((1 << 20) - 1), Some(Label::MAX));
        assert!(Label::EXTENSION.is_reserved());
        assert!(!Label::FIRST_UNRESERVED.is_reserved());
        assert_eq!(Label::from_bits(0xfff_ffff).value(), 0xf_ffff);
    }

    proptest! {
        #[test]
        fn prop_new_checked_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(l) = Lse::new_checked(&bytes[..]) {
                let r = LseRepr::parse(&l).unwrap();
                prop_assert_eq!(r.to_word(), l.word());
            }
            if let Ok(s) = LabelStack::new_checked(&bytes[..]) {
                prop_assert!(s.check_len().is_ok());
                prop_assert_eq!(s.iter().count(), s.depth());
                prop_assert!(s.entry(s.depth() - 1).unwrap().bos);
                let _ = s.payload();
            }
        }

        #[test]
        fn prop_word_round_trip(w in any::<u32>()) {
            prop_assert_eq!(LseRepr::from_word(w).to_word(), w);
        }
    }
}

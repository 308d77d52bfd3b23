//! DPDK's own longest-prefix-match tables, wrapped so that benchmarks and tests can
//! run them side by side with the project's FIB on the same keys. They are reference
//! peers, not used on the forwarding path: `rte_lpm` / `rte_fib` for IPv4,
//! `rte_lpm6` / `rte_fib6` for IPv6.

use std::ffi::CString;
use std::ptr::NonNull;

use super::{DpdkError, Eal, check, rte_errno, strerror};

/// `rte_lpm`'s hit flag in the results of [`RteLpm::lookup_bulk`].
pub const RTE_LPM_LOOKUP_SUCCESS: u32 = 0x0100_0000;

/// An `rte_lpm` table (DIR-24-8, 24-bit next hops).
#[derive(Debug)]
pub struct RteLpm {
    raw: NonNull<dpdk_sys::rte_lpm>,
}

// SAFETY: lookups only read the table; the single &mut writer is enforced by Rust.
unsafe impl Send for RteLpm {}
// SAFETY: as above.
unsafe impl Sync for RteLpm {}

fn c_name(name: &str) -> Result<CString, DpdkError> {
    CString::new(name).map_err(|_| DpdkError::Invalid(format!("name {name:?} contains NUL")))
}

impl RteLpm {
    /// Creates a table for up to `max_rules` prefixes and `number_tbl8s` tbl8 groups
    /// (one per /24 that holds longer prefixes).
    pub fn new(
        _eal: &Eal,
        name: &str,
        max_rules: u32,
        number_tbl8s: u32,
    ) -> Result<RteLpm, DpdkError> {
        let cname = c_name(name)?;
        let conf = dpdk_sys::rte_lpm_config {
            max_rules,
            number_tbl8s,
            flags: 0,
        };
        // SAFETY: EAL is up (&Eal); name and conf are valid for the call.
        let raw =
            unsafe { dpdk_sys::rte_lpm_create(cname.as_ptr(), dpdk_sys::SOCKET_ID_ANY, &conf) };
        let raw = NonNull::new(raw).ok_or_else(|| DpdkError::Call {
            what: format!("rte_lpm {name}"),
            reason: strerror(rte_errno()),
        })?;
        Ok(RteLpm { raw })
    }

    /// Adds (or replaces) `ip/depth` → `next_hop` (< 2^24). `ip` in host byte order.
    pub fn add(&mut self, ip: u32, depth: u8, next_hop: u32) -> Result<(), DpdkError> {
        // SAFETY: live table, exclusive access through &mut self.
        let ret = unsafe { dpdk_sys::rte_lpm_add(self.raw.as_ptr(), ip, depth, next_hop) };
        check(ret, || format!("rte_lpm_add {ip:#x}/{depth}")).map(drop)
    }

    /// Deletes `ip/depth`.
    pub fn delete(&mut self, ip: u32, depth: u8) -> Result<(), DpdkError> {
        // SAFETY: live table, exclusive access through &mut self.
        let ret = unsafe { dpdk_sys::rte_lpm_delete(self.raw.as_ptr(), ip, depth) };
        check(ret, || format!("rte_lpm_delete {ip:#x}/{depth}")).map(drop)
    }

    /// One lookup.
    pub fn lookup(&self, ip: u32) -> Option<u32> {
        let mut nh = 0u32;
        // SAFETY: live table; nh is a valid out-pointer.
        let r = unsafe { dpdk_sys::shim_rte_lpm_lookup(self.raw.as_ptr(), ip, &mut nh) };
        (r == 0).then_some(nh)
    }

    /// `rte_lpm_lookup_bulk`: `out[i]` gets [`RTE_LPM_LOOKUP_SUCCESS`] | next hop on a
    /// hit. Looks up `min(ips.len(), out.len())` keys.
    pub fn lookup_bulk(&self, ips: &[u32], out: &mut [u32]) {
        let n = ips.len().min(out.len());
        // SAFETY: both arrays hold at least n elements.
        unsafe {
            dpdk_sys::shim_rte_lpm_lookup_bulk(
                self.raw.as_ptr(),
                ips.as_ptr(),
                out.as_mut_ptr(),
                n as u32,
            )
        };
    }

    /// `rte_lpm_lookupx4` (SSE): four lookups, `default` where nothing matches.
    pub fn lookupx4(&self, ips: &[u32; 4], out: &mut [u32; 4], default: u32) {
        // SAFETY: both arrays hold 4 elements.
        unsafe {
            dpdk_sys::shim_rte_lpm_lookupx4(
                self.raw.as_ptr(),
                ips.as_ptr(),
                out.as_mut_ptr(),
                default,
            )
        };
    }
}

impl Drop for RteLpm {
    fn drop(&mut self) {
        // SAFETY: live table, freed once.
        unsafe { dpdk_sys::rte_lpm_free(self.raw.as_ptr()) }
    }
}

/// An `rte_fib` table of type DIR24_8 with 4-byte next hops.
#[derive(Debug)]
pub struct RteFib {
    raw: NonNull<dpdk_sys::rte_fib>,
}

// SAFETY: lookups only read the table; the single &mut writer is enforced by Rust.
unsafe impl Send for RteFib {}
// SAFETY: as above.
unsafe impl Sync for RteFib {}

impl RteFib {
    /// Creates a table for up to `max_routes` prefixes with `num_tbl8` tbl8 groups;
    /// `default_nh` is returned where nothing matches.
    pub fn new(
        _eal: &Eal,
        name: &str,
        max_routes: u32,
        num_tbl8: u32,
        default_nh: u64,
    ) -> Result<RteFib, DpdkError> {
        let cname = c_name(name)?;
        let mut conf = dpdk_sys::rte_fib_conf {
            type_: dpdk_sys::RTE_FIB_DIR24_8,
            default_nh,
            max_routes: max_routes as i32,
            ..Default::default()
        };
        conf.__bindgen_anon_1.dir24_8.nh_sz = dpdk_sys::RTE_FIB_DIR24_8_4B;
        conf.__bindgen_anon_1.dir24_8.num_tbl8 = num_tbl8;
        // SAFETY: EAL is up; name and conf are valid for the call.
        let raw =
            unsafe { dpdk_sys::rte_fib_create(cname.as_ptr(), dpdk_sys::SOCKET_ID_ANY, &mut conf) };
        let raw = NonNull::new(raw).ok_or_else(|| DpdkError::Call {
            what: format!("rte_fib {name}"),
            reason: strerror(rte_errno()),
        })?;
        Ok(RteFib { raw })
    }

    /// Adds (or replaces) `ip/depth` → `next_hop`. `ip` in host byte order.
    pub fn add(&mut self, ip: u32, depth: u8, next_hop: u64) -> Result<(), DpdkError> {
        // SAFETY: live table, exclusive access through &mut self.
        let ret = unsafe { dpdk_sys::rte_fib_add(self.raw.as_ptr(), ip, depth, next_hop) };
        check(ret, || format!("rte_fib_add {ip:#x}/{depth}")).map(drop)
    }

    /// Deletes `ip/depth`.
    pub fn delete(&mut self, ip: u32, depth: u8) -> Result<(), DpdkError> {
        // SAFETY: live table, exclusive access through &mut self.
        let ret = unsafe { dpdk_sys::rte_fib_delete(self.raw.as_ptr(), ip, depth) };
        check(ret, || format!("rte_fib_delete {ip:#x}/{depth}")).map(drop)
    }

    /// `rte_fib_lookup_bulk` over `min(ips.len(), out.len())` keys.
    pub fn lookup_bulk(&self, ips: &[u32], out: &mut [u64]) {
        let n = ips.len().min(out.len());
        // SAFETY: both arrays hold at least n elements; the function only reads ips.
        unsafe {
            dpdk_sys::rte_fib_lookup_bulk(
                self.raw.as_ptr(),
                ips.as_ptr().cast_mut(),
                out.as_mut_ptr(),
                n as i32,
            )
        };
    }
}

impl Drop for RteFib {
    fn drop(&mut self) {
        // SAFETY: live table, freed once.
        unsafe { dpdk_sys::rte_fib_free(self.raw.as_ptr()) }
    }
}

/// An `rte_fib6` table of type TRIE (a 24-bit first level, then 8-bit tbl8 groups)
/// with 4-byte next hops.
#[derive(Debug)]
pub struct RteFib6 {
    raw: NonNull<dpdk_sys::rte_fib6>,
}

// SAFETY: lookups only read the table; the single &mut writer is enforced by Rust.
unsafe impl Send for RteFib6 {}
// SAFETY: as above.
unsafe impl Sync for RteFib6 {}

impl RteFib6 {
    /// Bytes per next hop ([`RteFib6::new`] configures 4-byte next hops).
    pub const NH_BYTES: usize = 4;

    /// Creates a table for up to `max_routes` prefixes with `num_tbl8` tbl8 groups;
    /// `default_nh` is returned where nothing matches.
    pub fn new(
        _eal: &Eal,
        name: &str,
        max_routes: u32,
        num_tbl8: u32,
        default_nh: u64,
    ) -> Result<RteFib6, DpdkError> {
        let cname = c_name(name)?;
        let mut conf = dpdk_sys::rte_fib6_conf {
            type_: dpdk_sys::RTE_FIB6_TRIE,
            default_nh,
            max_routes: max_routes as i32,
            ..Default::default()
        };
        conf.__bindgen_anon_1.trie.nh_sz = dpdk_sys::RTE_FIB6_TRIE_4B;
        conf.__bindgen_anon_1.trie.num_tbl8 = num_tbl8;
        // SAFETY: EAL is up; name and conf are valid for the call.
        let raw = unsafe {
            dpdk_sys::rte_fib6_create(cname.as_ptr(), dpdk_sys::SOCKET_ID_ANY, &mut conf)
        };
        let raw = NonNull::new(raw).ok_or_else(|| DpdkError::Call {
            what: format!("rte_fib6 {name}"),
            reason: strerror(rte_errno()),
        })?;
        Ok(RteFib6 { raw })
    }

    /// Adds (or replaces) `ip/depth` → `next_hop` (< 2^31 with 4-byte next hops).
    /// `ip` in network byte order.
    pub fn add(&mut self, ip: &[u8; 16], depth: u8, next_hop: u64) -> Result<(), DpdkError> {
        // SAFETY: live table, exclusive access through &mut self; ip holds 16 bytes.
        let ret =
            unsafe { dpdk_sys::rte_fib6_add(self.raw.as_ptr(), ip.as_ptr(), depth, next_hop) };
        check(ret, || format!("rte_fib6_add {ip:02x?}/{depth}")).map(drop)
    }

    /// Deletes `ip/depth`.
    pub fn delete(&mut self, ip: &[u8; 16], depth: u8) -> Result<(), DpdkError> {
        // SAFETY: live table, exclusive access through &mut self; ip holds 16 bytes.
        let ret = unsafe { dpdk_sys::rte_fib6_delete(self.raw.as_ptr(), ip.as_ptr(), depth) };
        check(ret, || format!("rte_fib6_delete {ip:02x?}/{depth}")).map(drop)
    }

    /// `rte_fib6_lookup_bulk` over `min(ips.len(), out.len())` keys (network byte
    /// order); the default next hop where nothing matches.
    pub fn lookup_bulk(&self, ips: &[[u8; 16]], out: &mut [u64]) {
        let n = ips.len().min(out.len());
        // SAFETY: both arrays hold at least n elements; the function only reads ips.
        unsafe {
            dpdk_sys::rte_fib6_lookup_bulk(
                self.raw.as_ptr(),
                ips.as_ptr().cast_mut(),
                out.as_mut_ptr(),
                n as i32,
            )
        };
    }
}

impl Drop for RteFib6 {
    fn drop(&mut self) {
        // SAFETY: live table, freed once.
        unsafe { dpdk_sys::rte_fib6_free(self.raw.as_ptr()) }
    }
}

/// An `rte_lpm6` table (a 24-bit first level, then 8-bit tbl8 groups; 21-bit next
/// hops).
#[derive(Debug)]
pub struct RteLpm6 {
    raw: NonNull<dpdk_sys::rte_lpm6>,
}

// SAFETY: lookups only read the table; the single &mut writer is enforced by Rust.
unsafe impl Send for RteLpm6 {}
// SAFETY: as above.
unsafe impl Sync for RteLpm6 {}

impl RteLpm6 {
    /// Creates a table for up to `max_rules` prefixes and `number_tbl8s` tbl8 groups.
    pub fn new(
        _eal: &Eal,
        name: &str,
        max_rules: u32,
        number_tbl8s: u32,
    ) -> Result<RteLpm6, DpdkError> {
        let cname = c_name(name)?;
        let conf = dpdk_sys::rte_lpm6_config {
            max_rules,
            number_tbl8s,
            flags: 0,
        };
        // SAFETY: EAL is up (&Eal); name and conf are valid for the call.
        let raw =
            unsafe { dpdk_sys::rte_lpm6_create(cname.as_ptr(), dpdk_sys::SOCKET_ID_ANY, &conf) };
        let raw = NonNull::new(raw).ok_or_else(|| DpdkError::Call {
            what: format!("rte_lpm6 {name}"),
            reason: strerror(rte_errno()),
        })?;
        Ok(RteLpm6 { raw })
    }

    /// Adds (or replaces) `ip/depth` → `next_hop` (< 2^21). `ip` in network byte order.
    pub fn add(&mut self, ip: &[u8; 16], depth: u8, next_hop: u32) -> Result<(), DpdkError> {
        // SAFETY: live table, exclusive access through &mut self; ip holds 16 bytes.
        let ret =
            unsafe { dpdk_sys::rte_lpm6_add(self.raw.as_ptr(), ip.as_ptr(), depth, next_hop) };
        check(ret, || format!("rte_lpm6_add {ip:02x?}/{depth}")).map(drop)
    }

    /// Deletes `ip/depth`.
    pub fn delete(&mut self, ip: &[u8; 16], depth: u8) -> Result<(), DpdkError> {
        // SAFETY: live table, exclusive access through &mut self; ip holds 16 bytes.
        let ret = unsafe { dpdk_sys::rte_lpm6_delete(self.raw.as_ptr(), ip.as_ptr(), depth) };
        check(ret, || format!("rte_lpm6_delete {ip:02x?}/{depth}")).map(drop)
    }

    /// One lookup (`ip` in network byte order).
    pub fn lookup(&self, ip: &[u8; 16]) -> Option<u32> {
        let mut nh = 0u32;
        // SAFETY: live table; ip holds 16 bytes; nh is a valid out-pointer.
        let r = unsafe { dpdk_sys::rte_lpm6_lookup(self.raw.as_ptr(), ip.as_ptr(), &mut nh) };
        (r == 0).then_some(nh)
    }

    /// `rte_lpm6_lookup_bulk_func` over `min(ips.len(), out.len())` keys: the next
    /// hop, or -1 where nothing matches.
    pub fn lookup_bulk(&self, ips: &[[u8; 16]], out: &mut [i32]) {
        let n = ips.len().min(out.len());
        // SAFETY: both arrays hold at least n elements; the function only reads ips.
        unsafe {
            dpdk_sys::rte_lpm6_lookup_bulk_func(
                self.raw.as_ptr(),
                ips.as_ptr().cast_mut(),
                out.as_mut_ptr(),
                n as u32,
            )
        };
    }
}

impl Drop for RteLpm6 {
    fn drop(&mut self) {
        // SAFETY: live table, freed once.
        unsafe { dpdk_sys::rte_lpm6_free(self.raw.as_ptr()) }
    }
}

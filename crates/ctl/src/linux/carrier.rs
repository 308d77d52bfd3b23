//! A TAP twin's carrier follows its port's link. tun-rs has no call for it, so
//! this is the one ioctl the Linux control plane makes by hand: TUNSETCARRIER
//! (Linux 5.0+), `_IOW('T', 226, int)`.

use std::io;
use std::os::fd::RawFd;

/// `_IOW('T', 226, int)`.
const TUNSETCARRIER: libc::c_ulong = ioc_write(b'T', 226, size_of::<libc::c_int>());

/// The `_IOW` encoding of the kernel's ioctl numbers (asm-generic).
const fn ioc_write(kind: u8, nr: u8, size: usize) -> libc::c_ulong {
    (1 << 30)
        | ((size as libc::c_ulong) << 16)
        | ((kind as libc::c_ulong) << 8)
        | nr as libc::c_ulong
}

/// Sets the carrier of the TAP device open on `fd`: with it off the kernel sees
/// the link down (routes over it marked linkdown, routing daemons react at once).
pub fn set_carrier(fd: RawFd, on: bool) -> io::Result<()> {
    let v = libc::c_int::from(on);
    // SAFETY: TUNSETCARRIER reads one int through the pointer, which outlives the
    // call; `fd` is a TAP device the caller holds open.
    let rc = unsafe { libc::ioctl(fd, TUNSETCARRIER as _, &v as *const libc::c_int) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_number_is_the_kernels() {
        // include/uapi/linux/if_tun.h: TUNSETCARRIER _IOW('T', 226, int)
        assert_eq!(TUNSETCARRIER, 0x4004_54e2);
    }
}

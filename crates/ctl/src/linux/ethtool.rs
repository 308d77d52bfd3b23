//! Has the kernel announce a twin's carrier change at once.
//!
//! A TAP's carrier change is a non-urgent link event for the kernel's linkwatch,
//! which publishes those at most once a second (operstate, RTM_NEWLINK, routes
//! marked linkdown): right after a port's veth changed, the twin's news waits up
//! to a second, and so do the routing daemons. Asking the device's link state
//! the ethtool way (ETHTOOL_GLINK) makes the kernel run the device's pending
//! event first, so the change is published within the call.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

const ETHTOOL_GLINK: u32 = 0x0000_000a;

/// `struct ethtool_value`.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// Runs the kernel's pending link event of `ifindex` in the namespace of `sock`
/// (any socket of that namespace: the device ioctls fall back to it).
pub fn sync_link(sock: BorrowedFd<'_>, ifindex: u32) -> io::Result<()> {
    let fd = sock.as_raw_fd();
    // SAFETY: an all-zero ifreq is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    req.ifr_ifru.ifru_ifindex = i32::try_from(ifindex).map_err(|_| io::ErrorKind::InvalidInput)?;
    // SAFETY: SIOCGIFNAME reads the index of `req` and writes its name field.
    if unsafe { libc::ioctl(fd, libc::SIOCGIFNAME, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut value = EthtoolValue {
        cmd: ETHTOOL_GLINK,
        data: 0,
    };
    req.ifr_ifru.ifru_data = (&raw mut value).cast();
    // SAFETY: SIOCETHTOOL with ETHTOOL_GLINK reads the device name of `req` and
    // writes `value`, which outlives the call.
    if unsafe { libc::ioctl(fd, libc::SIOCETHTOOL, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

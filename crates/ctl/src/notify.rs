//! systemd's readiness protocol (`sd_notify`): under a `Type=notify` unit the
//! daemon says `READY=1` once it forwards, `RELOADING=1` around a reload and
//! `STOPPING=1` when it stops, as datagrams to `$NOTIFY_SOCKET`. Without that
//! variable (not started by systemd) nothing is sent.

use std::ffi::OsStr;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// Sends `state` (lines of `KEY=VALUE`) to systemd, if it listens. A failure
/// is logged and otherwise ignored: readiness is advice.
pub fn notify(state: &str) {
    if let Some(socket) = std::env::var_os("NOTIFY_SOCKET") {
        if let Err(e) = send_to(&socket, state) {
            tracing::warn!("systemd notify ({}): {e}", state.replace('\n', " "));
        }
    }
}

/// Sends `state` to `socket`: a path, or `@name` for an abstract socket.
pub fn send_to(socket: &OsStr, state: &str) -> std::io::Result<()> {
    let addr = match socket.as_bytes().strip_prefix(b"@") {
        Some(name) => SocketAddr::from_abstract_name(name)?,
        None => SocketAddr::from_pathname(socket)?,
    };
    UnixDatagram::unbound()?.send_to_addr(state.as_bytes(), &addr)?;
    Ok(())
}

/// `READY=1` with a status line.
pub fn ready(status: &str) {
    notify(&format!("READY=1\nSTATUS={status}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_socket_and_an_abstract_one_both_get_the_state() {
        let dir = std::env::temp_dir().join(format!("dp-notify-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let at_path = UnixDatagram::bind(&path).unwrap();
        let name = format!("dp-notify-test-{}", std::process::id());
        let abs = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let at_name = UnixDatagram::bind_addr(&abs).unwrap();
        send_to(path.as_os_str(), "READY=1").unwrap();
        send_to(OsStr::new(&format!("@{name}")), "STOPPING=1").unwrap();
        let mut buf = [0u8; 64];
        let n = at_path.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        let n = at_name.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1");
        assert!(send_to(dir.join("nobody").as_os_str(), "READY=1").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

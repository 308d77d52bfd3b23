//! Network namespaces: open (or create) the one the routing daemons run in, and
//! run code inside it so that the TAP devices and netlink sockets made there
//! belong to it. Sockets and TAP file descriptors stay in their namespace
//! whatever thread uses them later.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::process::Command;

/// A named network namespace (`ip netns` style, under /run/netns).
#[derive(Debug)]
pub struct Netns {
    name: String,
    file: File,
}

impl Netns {
    /// Opens namespace `name`, creating it with `ip netns add` (and its `lo` up)
    /// if it does not exist. Returns it and whether it was created.
    pub fn open_or_create(name: &str) -> io::Result<(Netns, bool)> {
        if name.is_empty()
            || name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            || name.starts_with('.')
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("netns name {name:?}: use letters, digits, '-', '_' or '.'"),
            ));
        }
        let path = PathBuf::from("/run/netns").join(name);
        let mut created = false;
        if !path.exists() {
            let out = Command::new("ip").args(["netns", "add", name]).output()?;
            if !out.status.success() {
                return Err(io::Error::other(format!(
                    "ip netns add {name}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            // A new namespace's loopback is down: routing daemons (and zebra's
            // FPM connection to 127.0.0.1) need it.
            let out = Command::new("ip")
                .args(["-n", name, "link", "set", "lo", "up"])
                .output()?;
            if !out.status.success() {
                return Err(io::Error::other(format!(
                    "ip -n {name} link set lo up: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            created = true;
        }
        let file = File::open(&path)?;
        Ok((
            Netns {
                name: name.to_string(),
                file,
            },
            created,
        ))
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `f` on a thread of its own that has entered the namespace.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> io::Result<T> {
        let file = &self.file;
        std::thread::scope(|s| {
            s.spawn(move || {
                // (changes only this thread's network namespace)
                nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET)
                    .map_err(io::Error::from)?;
                Ok(f())
            })
            .join()
            .map_err(|_| io::Error::other("thread in the namespace panicked"))?
        })
    }
}

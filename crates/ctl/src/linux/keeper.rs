//! The twins' keeper: a small process that holds a disabled queue of every twin
//! so that the twins outlive the daemon.
//!
//! Twins are multi-queue TAPs. The daemon reads and writes its own queue; the
//! keeper attaches one more queue to each twin and disables it at once, so the
//! kernel never sends it a frame. When the daemon exits (stopped, killed with
//! -9, crashed), its queue goes but the keeper's disabled one stays: the kernel
//! neither deletes the twin nor takes its carrier, so its addresses, the routes
//! through it and the routing daemons' adjacencies over it stay as they were.
//! The next daemon attaches a queue to the same twins and relearns the
//! namespace by dump (what changed meanwhile comes with it).
//!
//! One keeper per namespace, found through an abstract Unix socket named after
//! the namespace and its inode (a namespace deleted and made again under the
//! same name gets a keeper of its own). It takes one request per connection, a
//! line: `hold NAME...` (hold exactly these twins: new ones are attached,
//! others let go, which deletes them unless a daemon still has them open) or
//! `release` (let go of all and exit), and answers `ok` or `error WHY`. It exits
//! by itself when its namespace is deleted (`ip netns del`).
#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long the daemon waits for a keeper's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a keeper looks whether its namespace still exists.
const NETNS_CHECK: u16 = 250;

fn netns_path(netns: &str) -> PathBuf {
    Path::new("/run/netns").join(netns)
}

fn socket_addr(netns: &str, ino: u64) -> io::Result<SocketAddr> {
    SocketAddr::from_abstract_name(format!("dataplaned-twins/{netns}/{ino}"))
}

/// The inode of namespace `netns` as `ip netns` names it (what tells one
/// namespace from another made later under the same name).
pub fn netns_ino(netns: &str) -> io::Result<u64> {
    Ok(std::fs::metadata(netns_path(netns))?.ino())
}

/// Whether Linux has an interface `name` in the calling thread's namespace.
pub fn interface_exists(name: &str) -> bool {
    let Ok(c) = CString::new(name) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::if_nametoindex(c.as_ptr()) != 0 }
}

/// Attaches a queue to the existing multi-queue TAP `name` (in the calling
/// thread's namespace) and disables it: the TAP lives as long as the returned
/// file, and no frame is ever queued to it.
fn attach_disabled(name: &str) -> io::Result<File> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not an interface name"),
        ));
    }
    // TUNSETIFF would make a new TAP under a name that does not exist.
    if !interface_exists(name) {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface {name}"),
        ));
    }
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open("/dev/net/tun")?;
    // SAFETY: an all-zero ifreq is a valid value of the plain C struct.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI | libc::IFF_MULTI_QUEUE) as i16;
    // SAFETY: TUNSETIFF reads and writes one ifreq, which `req` is, on a tun fd.
    if unsafe { libc::ioctl(f.as_raw_fd(), libc::TUNSETIFF, &mut req) } < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("{name}: not a multi-queue TAP ({e})"),
        ));
    }
    req.ifr_ifru.ifru_flags = libc::IFF_DETACH_QUEUE as i16;
    // SAFETY: as above, TUNSETQUEUE reads one ifreq.
    if unsafe { libc::ioctl(f.as_raw_fd(), libc::TUNSETQUEUE, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(f)
}

/// What [`hold`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// A running keeper now holds the twins.
    Asked,
    /// A new keeper was started and holds them.
    Started(u32),
}

/// Sends one request line to the keeper of `netns`; `Ok(None)` when there is
/// none.
fn ask(netns: &str, ino: u64, line: &str) -> io::Result<Option<String>> {
    let mut s = match UnixStream::connect_addr(&socket_addr(netns, ino)?) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound
            ) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    s.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    s.set_write_timeout(Some(ANSWER_TIMEOUT))?;
    s.write_all(format!("{line}\n").as_bytes())?;
    let mut answer = String::new();
    BufReader::new(s).read_line(&mut answer)?;
    Ok(Some(answer.trim_end().to_string()))
}

fn answer_ok(answer: &str) -> io::Result<()> {
    match answer {
        "ok" => Ok(()),
        a => Err(io::Error::other(format!(
            "keeper: {}",
            a.strip_prefix("error ").unwrap_or(a)
        ))),
    }
}

/// Makes the keeper of `netns` hold exactly the twins `names` (which exist):
/// asks the running one, or starts `exe --keep-twins` when there is none.
pub fn hold(netns: &str, ino: u64, names: &[String], exe: &Path) -> io::Result<Held> {
    let line = format!("hold {}", names.join(" "));
    if let Some(a) = ask(netns, ino, &line)? {
        return answer_ok(&a).map(|()| Held::Asked);
    }
    let mut child = Command::new(exe)
        .arg("--keep-twins")
        .arg(netns)
        .arg("--netns-ino")
        .arg(ino.to_string())
        .args(names)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        // Its own process group: the terminal's ^C to the daemon leaves it be.
        .process_group(0)
        .spawn()?;
    let pid = child.id();
    let out = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let r = BufReader::new(out).read_line(&mut line).map(|_| line);
        let _ = tx.send(r);
    });
    let answer = match rx.recv_timeout(ANSWER_TIMEOUT) {
        Ok(r) => r?,
        Err(_) => {
            let _ = child.kill();
            return Err(io::Error::new(io::ErrorKind::TimedOut, "keeper: no answer"));
        }
    };
    // Reap it when it exits; it outlives this process otherwise.
    std::thread::spawn(move || child.wait());
    answer_ok(answer.trim_end()).map(|()| Held::Started(pid))
}

/// Tells the keeper of `netns` to let go of its twins and exit; false when
/// there was none.
pub fn release(netns: &str) -> io::Result<bool> {
    let ino = match netns_ino(netns) {
        Ok(ino) => ino,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    match ask(netns, ino, "release")? {
        Some(a) => answer_ok(&a).map(|()| true),
        None => Ok(false),
    }
}

/// The keeper process (`dataplaned --keep-twins NETNS --netns-ino INO
/// NAME...`): holds the twins and serves requests until released or until its
/// namespace is gone. Prints `ok` (or `error WHY`) once it holds them.
pub fn run(netns: &str, ino: u64, names: &[String]) -> io::Result<()> {
    // Whatever the daemon left open without close-on-exec (DPDK's hugepage
    // files among them) must not live on here.
    // SAFETY: closes descriptors from 3 up; none is in use by this process yet.
    unsafe { libc::close_range(3, u32::MAX, 0) };
    let mut stdout = io::stdout();
    let result = (|| {
        let listener = UnixListener::bind_addr(&socket_addr(netns, ino)?)?;
        let ns = File::open(netns_path(netns))?;
        if ns.metadata()?.ino() != ino {
            return Err(io::Error::other(format!("netns {netns} changed")));
        }
        nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)?;
        let mut held = BTreeMap::new();
        set_held(&mut held, names)?;
        Ok((listener, held))
    })();
    let (listener, mut held) = match result {
        Ok(v) => v,
        Err(e) => {
            let _ = writeln!(stdout, "error {e}");
            return Err(e);
        }
    };
    writeln!(stdout, "ok")?;
    stdout.flush()?;
    loop {
        let mut fds = [nix::poll::PollFd::new(
            listener.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        let ready = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(NETNS_CHECK));
        if netns_ino(netns).ok() != Some(ino) {
            return Ok(());
        }
        if !matches!(ready, Ok(n) if n > 0) {
            continue;
        }
        let Ok((s, _)) = listener.accept() else {
            continue;
        };
        if serve(s, &mut held) {
            return Ok(());
        }
    }
}

/// One request; true when it says to exit.
fn serve(s: UnixStream, held: &mut BTreeMap<String, File>) -> bool {
    let _ = s.set_read_timeout(Some(ANSWER_TIMEOUT));
    let _ = s.set_write_timeout(Some(ANSWER_TIMEOUT));
    let mut line = String::new();
    let mut r = BufReader::new(&s);
    if r.read_line(&mut line).is_err() {
        return false;
    }
    let mut words = line.split_whitespace();
    let (answer, exit) = match words.next() {
        Some("hold") => {
            let names: Vec<String> = words.map(str::to_string).collect();
            match set_held(held, &names) {
                Ok(()) => ("ok".to_string(), false),
                Err(e) => (format!("error {e}"), false),
            }
        }
        Some("release") => ("ok".to_string(), true),
        _ => (format!("error unknown request {:?}", line.trim()), false),
    };
    let _ = (&s).write_all(format!("{answer}\n").as_bytes());
    exit
}

/// Holds exactly `names`: attaches the new ones, lets go of the others.
fn set_held(held: &mut BTreeMap<String, File>, names: &[String]) -> io::Result<()> {
    held.retain(|n, _| names.contains(n));
    for n in names {
        if !held.contains_key(n) {
            held.insert(n.clone(), attach_disabled(n)?);
        }
    }
    Ok(())
}

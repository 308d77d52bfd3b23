//! The daemon's side of the control socket: binding it safely, and the tokio tasks
//! that read requests from connections and hand them to the control loop.
//!
//! Connections are tasks on the control thread's current-thread runtime; they only
//! move bytes. Every request goes through one channel to the control loop, which owns
//! the router and runs requests one at a time, so requests never interleave and the
//! workers see each change as one update.

use std::os::fd::BorrowedFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::error::{ApiError, ErrorKind};
use crate::proto::{MAX_REQUEST, Probe, Request, Response, probe};

/// What the control loop serves: the router or the cross-connect.
pub trait Service {
    /// Periodic control work (every 20 ms): neighbour events, punted packets.
    fn tick(&mut self) {}
    /// Netlink and FPM I/O of the control plane while [`Service::wants_io`]:
    /// called when one of [`Service::io_fds`] is readable, and on every tick
    /// for work that is due by time. Returns whether it stopped with work left
    /// (a read budget ran out): it is then called again at once.
    fn io(&mut self) -> bool {
        false
    }
    /// Whether [`Service::io`] has work (a Linux control plane runs).
    fn wants_io(&self) -> bool {
        false
    }
    /// The descriptors whose readability means [`Service::io`] has work, each
    /// with a token that changes when the descriptor is replaced (a new
    /// connection may reuse a closed one's number).
    fn io_fds(&self) -> Vec<(BorrowedFd<'_>, u64)> {
        Vec::new()
    }
    /// Fills one Prometheus scrape (`[metrics]`) from the counters `show` reads.
    fn metrics(&self, _scrape: &mut crate::metrics::Scrape) {}
    /// Runs one request (the words of a `dpctl` command); `Err` says why it was
    /// refused (its text for the operator, its kind for programs: see
    /// [`answer`]). A request that fails has changed nothing.
    fn handle(&mut self, args: &[String]) -> Result<serde_json::Value, ApiError>;
}

/// One request on its way to the control loop, with the way back.
#[derive(Debug)]
pub struct Job {
    /// The command's words.
    pub args: Vec<String>,
    /// Where the result goes.
    pub reply: oneshot::Sender<Result<serde_json::Value, ApiError>>,
}

/// The protocol's answer to request `id`: the one place a refusal becomes the
/// response's `error` (its text) and `kind` ([`ApiError::kind`]).
pub fn answer(id: u64, result: Result<serde_json::Value, ApiError>) -> Response {
    match result {
        Ok(v) => Response::ok(id, v),
        Err(e) => Response::err(id, e.to_string()).with_kind(e.kind().as_str()),
    }
}

/// The bound control socket. Removes its file when dropped (if the file is still
/// the one it created).
#[derive(Debug)]
pub struct ControlSocket {
    path: PathBuf,
    listener: Option<std::os::unix::net::UnixListener>,
    inode: (u64, u64),
}

impl ControlSocket {
    /// Binds `path` with permissions `mode`. A socket file nobody answers on (left by
    /// a daemon that died) is replaced; if a daemon answers, or the path is not a
    /// socket, this fails and touches nothing.
    pub fn bind(path: &Path, mode: u32) -> Result<ControlSocket> {
        let shown = path.display();
        match probe(path).with_context(|| format!("control socket {shown}"))? {
            Probe::Alive => bail!(
                "control socket {shown}: another dataplaned answers there (stop it, or give this one its own --socket or [control] socket)"
            ),
            Probe::NotSocket => bail!(
                "control socket {shown} exists and is not a socket; remove it or choose another path ([control] socket or --socket)"
            ),
            Probe::Stale => std::fs::remove_file(path)
                .with_context(|| format!("removing the stale control socket {shown}"))?,
            Probe::Absent => {}
        }
        // Bound inside a fresh directory only we can enter, given its permissions,
        // then moved into place: nobody can connect before the mode is set, and no
        // process-wide umask is touched.
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        // The default's directory (/run/dataplane) is made when missing, as
        // systemd's RuntimeDirectory= would.
        if !parent.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(parent)
                .with_context(|| format!("creating {} for the control socket", parent.display()))?;
        }
        let tmp = parent.join(format!(".dataplaned-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&tmp)
            .with_context(|| {
                format!("creating the control socket {shown} (is {} there and writable? set --socket or [control] socket)", parent.display())
            })?;
        let staged = tmp.join("s");
        let bound = std::os::unix::net::UnixListener::bind(&staged)
            .with_context(|| format!("binding the control socket {shown}"))
            .and_then(|l| {
                std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(mode))
                    .with_context(|| format!("setting permissions of {shown}"))?;
                std::fs::rename(&staged, path)
                    .with_context(|| format!("moving the control socket into place at {shown}"))?;
                Ok(l)
            });
        let _ = std::fs::remove_dir_all(&tmp);
        let listener = bound?;
        let meta = std::fs::metadata(path).with_context(|| format!("control socket {shown}"))?;
        Ok(ControlSocket {
            path: path.to_path_buf(),
            listener: Some(listener),
            inode: (meta.dev(), meta.ino()),
        })
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The listener for the runtime (call inside it, once).
    pub fn take_listener(&mut self) -> Result<tokio::net::UnixListener> {
        let l = self
            .listener
            .take()
            .context("the control socket listener was taken already")?;
        l.set_nonblocking(true)?;
        Ok(tokio::net::UnixListener::from_std(l)?)
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        if let Ok(m) = std::fs::symlink_metadata(&self.path) {
            if (m.dev(), m.ino()) == self.inode {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Accepts connections until the runtime stops; each gets its own task.
pub async fn accept_loop(listener: tokio::net::UnixListener, jobs: mpsc::Sender<Job>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(connection(stream, jobs.clone()));
            }
            Err(e) => {
                // Out of file descriptors and the like: wait instead of spinning.
                tracing::warn!("control socket: accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// Serves one connection: a request per line, answered in order. A line that ends
/// without a newline (the client went away mid-request) is dropped unread.
async fn connection(stream: tokio::net::UnixStream, jobs: mpsc::Sender<Job>) {
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    loop {
        let mut buf = Vec::new();
        match (&mut r)
            .take(MAX_REQUEST as u64 + 1)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if buf.last() != Some(&b'\n') {
            if buf.len() > MAX_REQUEST {
                let e = Response::err(0, format!("request longer than {MAX_REQUEST} bytes"))
                    .with_kind(ErrorKind::Refused.as_str());
                let _ = w.write_all(e.to_line().as_bytes()).await;
            }
            return;
        }
        let resp = match serde_json::from_slice::<Request>(&buf) {
            Err(e) => Response::err(
                0,
                format!(
                    "not a request ({e}); send {{\"id\":N,\"args\":[\"show\",\"run\"]}} and a newline"
                ),
            )
            .with_kind(ErrorKind::Syntax.as_str()),
            Ok(req) => {
                let (tx, rx) = oneshot::channel();
                let job = Job {
                    args: req.args,
                    reply: tx,
                };
                if jobs.send(job).await.is_err() {
                    return;
                }
                match rx.await {
                    Ok(result) => answer(req.id, result),
                    Err(_) => return,
                }
            }
        };
        let line = resp.to_line();
        drop(resp);
        let sent = w.write_all(line.as_bytes()).await;
        // A large reply (a full table's `route show`) leaves its tree and text
        // free in the C heap, scattered where the next allocations will not
        // fill them: give them back rather than keep the high-water mark.
        if line.len() >= TRIM_AFTER {
            drop(line);
            crate::linux::heap::trim();
        }
        if sent.is_err() {
            return;
        }
    }
}

/// Reply size from which the heap is trimmed after sending, bytes.
const TRIM_AFTER: usize = 1 << 20;

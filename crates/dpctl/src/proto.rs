//! The control protocol between `dpctl` (or any client) and `dataplaned`.
//!
//! A unix stream socket carrying newline-delimited JSON, one request line answered by
//! one response line, in order; a connection may carry any number of requests.
//!
//! ```text
//! -> {"id":1,"args":["route","add","10.0.1.1/32","via","192.168.11.10","port0","out-labels","100"]}
//! <- {"id":1,"ok":true,"data":null}
//! -> {"id":2,"args":["route","show","10.0.1.1/32"]}
//! <- {"id":2,"ok":true,"data":{"routes":[{"table":0,"prefix":"10.0.1.1/32","kind":"paths","paths":[...]}]}}
//! -> {"id":3,"args":["label","add","3","eos","drop"]}
//! <- {"id":3,"ok":false,"error":"in-label 3 is special-purpose ...","kind":"refused"}
//! -> {"id":4,"args":["route","del","10.99.0.0/16"]}
//! <- {"id":4,"ok":false,"error":"no route 10.99.0.0/16 in table 0 ...","kind":"not_found"}
//! ```
//!
//! A request is the words of a `dpctl` command ([`crate::cli`]); the daemon parses
//! them itself, checks the request completely against the running router and only
//! then applies it, so a failed request changes nothing. `data` is the command's
//! result as JSON (what `dpctl --json` prints); `dpctl` renders it as text otherwise.
//! A request line is applied only once it is complete (ends in a newline): a client
//! that disconnects in the middle of one changes nothing. Request lines are at most
//! [`MAX_REQUEST`] bytes; requests from all connections are handled one at a time by
//! the control thread, in arrival order.
//!
//! A refusal (`"ok":false`) carries `error`, the message for the operator (what is
//! wrong and how to fix it; `dpctl` prints it), and `kind`, what kind of refusal it
//! is, for programs to branch on (a client should treat a missing or unknown kind
//! as `refused`):
//!
//! | `kind` | meaning |
//! |---|---|
//! | `syntax` | the words are not a command (unknown command, bad or missing words), or the line is not a request |
//! | `not_found` | what the request names does not exist (route, label, interface, table, VRF, neighbour, address, collector) |
//! | `exists` | what the request would create exists already (`route add` of a route: use `route replace`) |
//! | `conflict` | someone else holds it: a learned route or label, an interface address's route, an interface Linux owns, an interface in use |
//! | `refused` | the router, the FIB, the label table or a policy refused it (bad label or next hop, a family not forwarded, a full table, a request over the size limit) |
//! | `config` | `reload`: the file is wrong or needs a restart (nothing applied), or the reload stopped part way (the message says so) |
//! | `internal` | a bug in dataplaned |

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Where `dataplaned` listens for `dpctl`, unless `--socket` says otherwise.
pub const DEFAULT_SOCKET: &str = "/run/dataplane/dataplaned.sock";

/// Longest response line a client reads, newline included (`route show` of a full
/// Internet table is about 60 MiB of JSON).
pub const MAX_LINE: usize = 512 << 20;

/// Longest request line the daemon accepts.
pub const MAX_REQUEST: usize = 64 << 10;

/// One request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Echoed in the response.
    #[serde(default)]
    pub id: u64,
    /// The command's words, as typed after `dpctl`.
    pub args: Vec<String>,
}

/// One response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The request's id.
    pub id: u64,
    /// Whether the request was applied (or the show answered).
    pub ok: bool,
    /// The result (`null` for changes that have nothing to say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    /// What is wrong and how to fix it, when `ok` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What kind of refusal `error` is, when `ok` is false: `syntax`, `not_found`,
    /// `exists`, `conflict`, `refused`, `config` or `internal` (see the module
    /// documentation). Absent from older daemons' answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

impl Response {
    /// A success.
    pub fn ok(id: u64, data: serde_json::Value) -> Response {
        Response {
            id,
            ok: true,
            data: Some(data),
            error: None,
            kind: None,
        }
    }

    /// A failure, without a kind (see [`Response::with_kind`]).
    pub fn err(id: u64, error: impl Into<String>) -> Response {
        Response {
            id,
            ok: false,
            data: None,
            error: Some(error.into()),
            kind: None,
        }
    }

    /// The failure with its kind (`not_found`, ...).
    pub fn with_kind(mut self, kind: impl Into<String>) -> Response {
        self.kind = Some(kind.into());
        self
    }

    /// The response as one line, newline included.
    pub fn to_line(&self) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                "{{\"id\":{},\"ok\":false,\"error\":\"encoding the response: {e}\"}}",
                self.id
            )
        });
        s.push('\n');
        s
    }
}

/// Why a client call failed.
#[derive(Debug, Error)]
pub enum ClientError {
    /// Nothing at the socket path.
    #[error(
        "dataplaned is not running: no control socket at {0} (start dataplaned, or point --socket at its socket)"
    )]
    NotRunning(PathBuf),
    /// A socket file nobody listens on (the daemon died without removing it).
    #[error(
        "dataplaned is not running: nothing answers on {0} (a stale socket; starting dataplaned removes it)"
    )]
    Stale(PathBuf),
    /// Not allowed to connect.
    #[error(
        "permission denied on {0} (the control socket is root-only by default: run dpctl as root)"
    )]
    Permission(PathBuf),
    /// The path is not a socket.
    #[error("{0} is not a socket (point --socket at dataplaned's control socket)")]
    NotSocket(PathBuf),
    /// No answer in time.
    #[error("dataplaned did not answer within {0:?} (busy or hung; raise --timeout)")]
    Timeout(Duration),
    /// The connection broke.
    #[error("talking to dataplaned: {0}")]
    Io(std::io::Error),
    /// The daemon answered something that is not a response.
    #[error("dataplaned sent a bad response: {0}")]
    Protocol(String),
    /// The daemon refused the request.
    #[error("{0}")]
    Refused(String),
}

impl ClientError {
    /// dpctl's exit status for this error: 1 when dataplaned refused the request,
    /// 3 when no dataplaned answered it (see [`EXIT_REFUSED`], [`EXIT_NO_DAEMON`]).
    pub fn exit_status(&self) -> u8 {
        match self {
            ClientError::Refused(_) => EXIT_REFUSED,
            _ => EXIT_NO_DAEMON,
        }
    }
}

/// Exit status: dataplaned refused the request (it changed nothing).
pub const EXIT_REFUSED: u8 = 1;
/// Exit status: the command is not one dpctl knows (bad syntax, bad options);
/// nothing was sent.
pub const EXIT_BAD_COMMAND: u8 = 2;
/// Exit status: no dataplaned answered (not running, a stale socket, no
/// permission, no answer in time, a broken connection or a bad answer).
pub const EXIT_NO_DAEMON: u8 = 3;

/// Whether a daemon answers at a socket path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Nothing at the path.
    Absent,
    /// Someone accepts connections there.
    Alive,
    /// A socket file that refuses connections: left over by a daemon that died.
    Stale,
    /// Something that is not a socket.
    NotSocket,
}

/// Looks at `path` without changing anything.
pub fn probe(path: &Path) -> std::io::Result<Probe> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Probe::Absent),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        return Ok(Probe::NotSocket);
    }
    match UnixStream::connect(path) {
        Ok(_) => Ok(Probe::Alive),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(Probe::Stale),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Probe::Absent),
        Err(e) => Err(e),
    }
}

/// A blocking client: one connection, requests answered in order.
#[derive(Debug)]
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
    timeout: Duration,
}

impl Client {
    /// Connects to the daemon at `path`; `timeout` bounds every later call.
    pub fn connect(path: &Path, timeout: Duration) -> Result<Client, ClientError> {
        let s = UnixStream::connect(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ClientError::NotRunning(path.into()),
            std::io::ErrorKind::ConnectionRefused => match probe(path) {
                Ok(Probe::NotSocket) => ClientError::NotSocket(path.into()),
                _ => ClientError::Stale(path.into()),
            },
            std::io::ErrorKind::PermissionDenied => ClientError::Permission(path.into()),
            _ => ClientError::Io(e),
        })?;
        let t = Some(timeout.max(Duration::from_millis(1)));
        s.set_read_timeout(t).map_err(ClientError::Io)?;
        s.set_write_timeout(t).map_err(ClientError::Io)?;
        let writer = s.try_clone().map_err(ClientError::Io)?;
        Ok(Client {
            reader: BufReader::new(s),
            writer,
            next_id: 1,
            timeout,
        })
    }

    /// Sends one command and waits for its result.
    pub fn call(&mut self, args: &[String]) -> Result<serde_json::Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let req = Request {
            id,
            args: args.to_vec(),
        };
        let mut line =
            serde_json::to_string(&req).map_err(|e| ClientError::Protocol(e.to_string()))?;
        line.push('\n');
        let timeout = self.timeout;
        let io = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                ClientError::Timeout(timeout)
            }
            _ => ClientError::Io(e),
        };
        self.writer.write_all(line.as_bytes()).map_err(io)?;
        let mut buf = Vec::new();
        (&mut self.reader)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut buf)
            .map_err(io)?;
        if buf.last() != Some(&b'\n') {
            return Err(ClientError::Protocol(if buf.is_empty() {
                "the connection closed before the answer (did dataplaned stop?)".into()
            } else {
                "the answer was cut short".into()
            }));
        }
        let resp: Response =
            serde_json::from_slice(&buf).map_err(|e| ClientError::Protocol(e.to_string()))?;
        if resp.id != id {
            return Err(ClientError::Protocol(format!(
                "answer to request {} while waiting for {id}",
                resp.id
            )));
        }
        if resp.ok {
            Ok(resp.data.unwrap_or(serde_json::Value::Null))
        } else {
            Err(ClientError::Refused(
                resp.error
                    .unwrap_or_else(|| "failed (no reason given)".into()),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_format() {
        let r: Request = serde_json::from_str(r#"{"id":7,"args":["show","run"]}"#).unwrap();
        assert_eq!(r.args, ["show", "run"]);
        assert!(serde_json::from_str::<Request>(r#"{"id":7,"argz":[]}"#).is_err());
        assert_eq!(
            Response::err(7, "no").to_line(),
            "{\"id\":7,\"ok\":false,\"error\":\"no\"}\n"
        );
        let e = Response::err(7, "no").with_kind("not_found");
        assert_eq!(
            e.to_line(),
            "{\"id\":7,\"ok\":false,\"error\":\"no\",\"kind\":\"not_found\"}\n"
        );
        assert_eq!(serde_json::from_str::<Response>(&e.to_line()).unwrap(), e);
        // Older daemons send no kind.
        let old: Response = serde_json::from_str(r#"{"id":7,"ok":false,"error":"no"}"#).unwrap();
        assert_eq!(old.kind, None);
        assert_eq!(
            Response::ok(8, serde_json::Value::Null).to_line(),
            "{\"id\":8,\"ok\":true,\"data\":null}\n"
        );
    }

    #[test]
    fn probe_and_connect_errors() {
        let dir = std::env::temp_dir().join(format!("dp-proto-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sock");
        assert_eq!(probe(&path).unwrap(), Probe::Absent);
        let e = Client::connect(&path, Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("not running"), "{e}");
        let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert_eq!(probe(&path).unwrap(), Probe::Alive);
        drop(l);
        assert_eq!(probe(&path).unwrap(), Probe::Stale);
        let e = Client::connect(&path, Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("stale"), "{e}");
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "x").unwrap();
        assert_eq!(probe(&path).unwrap(), Probe::NotSocket);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! Why the daemon refused a request: [`ApiError`], the error of every API
//! handler, and its [`ErrorKind`], which the control protocol sends beside the
//! message (`"kind"` in [`crate::proto::Response`]) so a client can tell "no
//! such route" from "exists already" from "bad syntax" without reading English.
//!
//! The message texts are the ones operators read (`dpctl: error: ...`); the
//! kind is for programs.

use dataplane::router::RouterError;
use fib::FibError;
use thiserror::Error;

use crate::cli::ParseError;
use crate::config::ConfigError;
use crate::routing::RoutingError;
use crate::sflow_agent::SectionError;
use crate::spec::ResolveError;

/// What kind of refusal an [`ApiError`] is: the `kind` of the protocol's
/// error responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Words that are not a command (unknown command, bad or missing words,
    /// a request line that is not a request).
    Syntax,
    /// What the request names does not exist (route, label, interface, table,
    /// neighbour, VRF, address).
    NotFound,
    /// What the request would create exists already.
    Exists,
    /// Someone else holds it: a learned route or label, an interface
    /// address's route, an interface Linux owns, an interface in use.
    Conflict,
    /// The router, the FIB, the label table or a policy refused the change.
    Refused,
    /// `reload`: the configuration file is wrong, needs a restart, or was
    /// applied only in part.
    Config,
    /// A bug in dataplaned (a command handed to the wrong handler).
    Internal,
}

impl ErrorKind {
    /// Every kind.
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::Syntax,
        ErrorKind::NotFound,
        ErrorKind::Exists,
        ErrorKind::Conflict,
        ErrorKind::Refused,
        ErrorKind::Config,
        ErrorKind::Internal,
    ];

    /// The kind's name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "syntax",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Exists => "exists",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Refused => "refused",
            ErrorKind::Config => "config",
            ErrorKind::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a request was refused. A refused request has changed nothing (except a
/// reload that stopped part way, which says so).
#[derive(Debug, Error)]
pub enum ApiError {
    /// The words are not a command.
    #[error(transparent)]
    Syntax(#[from] ParseError),
    /// What the request names does not exist.
    #[error("{0}")]
    NotFound(String),
    /// What the request would create exists already.
    #[error("{0}")]
    Exists(String),
    /// Someone else holds what the request would change (a learned route, an
    /// address's route, an interface Linux owns, ...).
    #[error("{0}")]
    Conflict(String),
    /// The routing state (FIB, label table, interfaces) refused the change to
    /// `what`.
    #[error("{what}: {source}")]
    Router {
        /// What was being changed (`route 10.0.0.0/8`).
        what: String,
        /// Why.
        #[source]
        source: RouterError,
    },
    /// The routing state refused the change; its message alone.
    #[error(transparent)]
    State(#[from] RouterError),
    /// A route or label entry `what` as written does not resolve against the
    /// router (unknown interface or table, bad labels), or the router refused it.
    #[error("{what}: {source}")]
    Resolve {
        /// What was being changed (`route 10.0.0.0/8`, `label 100 eos`).
        what: String,
        /// Why.
        #[source]
        source: ResolveError,
    },
    /// A name or table that does not resolve; its message alone.
    #[error(transparent)]
    Unresolved(#[from] ResolveError),
    /// The sFlow agent refused the change to `what`.
    #[error("{what}: {source}")]
    Sflow {
        /// The command (`sflow collector add`).
        what: String,
        /// Why.
        #[source]
        source: sflow::ConfigError,
    },
    /// `reload` refused the file, or stopped part way.
    #[error(transparent)]
    Config(#[from] ReloadError),
    /// Another refusal of policy (no Linux control plane, no workers, not in
    /// this forwarding mode, ...).
    #[error("{0}")]
    Refused(String),
    /// A bug in dataplaned.
    #[error("{0}")]
    Internal(String),
}

impl From<FibError> for ApiError {
    fn from(e: FibError) -> ApiError {
        ApiError::State(RouterError::Fib(e))
    }
}

impl ApiError {
    /// The kind of refusal, for programs.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ApiError::Syntax(_) => ErrorKind::Syntax,
            ApiError::NotFound(_) => ErrorKind::NotFound,
            ApiError::Exists(_) => ErrorKind::Exists,
            ApiError::Conflict(_) => ErrorKind::Conflict,
            ApiError::Router { source, .. } | ApiError::State(source) => router_kind(source),
            ApiError::Resolve { source, .. } | ApiError::Unresolved(source) => resolve_kind(source),
            ApiError::Sflow { source, .. } => match source {
                sflow::ConfigError::NoSuchCollector(_) => ErrorKind::NotFound,
                _ => ErrorKind::Refused,
            },
            ApiError::Config(_) => ErrorKind::Config,
            ApiError::Refused(_) => ErrorKind::Refused,
            ApiError::Internal(_) => ErrorKind::Internal,
        }
    }
}

/// The kind of a refusal of the routing state.
pub fn router_kind(e: &RouterError) -> ErrorKind {
    match e {
        RouterError::Fib(f) => fib_kind(f),
        RouterError::UnknownInterface(_)
        | RouterError::UnknownAdjacency(_)
        | RouterError::UnknownInterfaceName(_)
        | RouterError::NoSuchAddress(..)
        | RouterError::NoSuchLabel(..)
        | RouterError::NoSuchRoute(..) => ErrorKind::NotFound,
        RouterError::InterfaceExists(_) | RouterError::AddressExists(..) => ErrorKind::Exists,
        RouterError::LabelOwned { .. } => ErrorKind::Conflict,
        RouterError::Mpls(_)
        | RouterError::InvalidInterface { .. }
        | RouterError::InvalidAddress(..)
        | RouterError::Preference(_)
        | RouterError::TableInUse(_)
        | RouterError::Vrf(_)
        | RouterError::Pw(_) => ErrorKind::Refused,
    }
}

/// The kind of a refusal of the FIB.
pub fn fib_kind(e: &FibError) -> ErrorKind {
    match e {
        FibError::UnknownTable(_)
        | FibError::NoSuchRoute(..)
        | FibError::UnknownInterface(_)
        | FibError::UnknownNeighbor(..) => ErrorKind::NotFound,
        FibError::TableExists(_) => ErrorKind::Exists,
        FibError::PrefixLen(..)
        | FibError::HostBits { .. }
        | FibError::Parse(_)
        | FibError::TableInUse(..)
        | FibError::DefaultTable
        | FibError::InterfaceInUse(_)
        | FibError::InvalidNextHop(_)
        | FibError::NeedsInterface(_)
        | FibError::AttachedWithoutInterface
        | FibError::NoPaths
        | FibError::TooManyPaths(_)
        | FibError::Weight(_)
        | FibError::TooManyLabels(_)
        | FibError::LabelValue(_)
        | FibError::ResultsFull(_)
        | FibError::ViaTableNeedsRecursive => ErrorKind::Refused,
    }
}

/// The kind of a route or label entry that does not resolve.
pub fn resolve_kind(e: &ResolveError) -> ErrorKind {
    match e {
        ResolveError::Spec(_) => ErrorKind::Refused,
        ResolveError::UnknownInterface { .. } | ResolveError::UnknownTable { .. } => {
            ErrorKind::NotFound
        }
        ResolveError::Router(r) => router_kind(r),
    }
}

/// Why `reload` (`dpctl reload`, SIGHUP) refused the configuration file or
/// stopped part way.
#[derive(Debug, Error)]
pub enum ReloadError {
    /// The daemon was started without a file.
    #[error("this dataplaned was started without a configuration file to reload")]
    NoFile,
    /// The file does not read, parse or check.
    #[error("reload: {0}; nothing was applied")]
    File(ConfigError),
    /// Sections that only a restart applies changed.
    #[error(
        "reload: {sections} changed in {path}: restart dataplaned to apply that; nothing was applied (the routing sections neither)"
    )]
    Restart {
        /// The sections, comma-separated.
        sections: String,
        /// The file.
        path: String,
    },
    /// `[sflow]` is wrong; nothing was applied.
    #[error("reload: {0}; nothing was applied")]
    Sflow(SectionError),
    /// The routing sections were refused (nothing applied) or stopped part way
    /// (the message says which).
    #[error("reload: {0}")]
    Routing(RoutingError),
    /// The routing sections were applied and `[sflow]` then failed.
    #[error("reload: routing applied, [sflow] not: {0}")]
    SflowAfterRouting(SectionError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_texts() {
        let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "syntax",
                "not_found",
                "exists",
                "conflict",
                "refused",
                "config",
                "internal"
            ]
        );
        let e = ApiError::Router {
            what: "route 10.0.0.0/8".into(),
            source: RouterError::Fib(FibError::UnknownTable(7)),
        };
        assert_eq!(e.to_string(), "route 10.0.0.0/8: unknown table 7");
        assert_eq!(e.kind(), ErrorKind::NotFound);
        let e = ApiError::State(RouterError::Fib(FibError::TableExists(3)));
        assert_eq!(e.to_string(), "table 3 exists");
        assert_eq!(e.kind(), ErrorKind::Exists);
        let e = ApiError::State(RouterError::InterfaceExists("port0.7".into()));
        assert_eq!(e.kind(), ErrorKind::Exists);
        let e = ApiError::State(RouterError::Fib(FibError::DefaultTable));
        assert_eq!(e.kind(), ErrorKind::Refused);
        let e = ApiError::from(ParseError("unknown command \"x\"".into()));
        assert_eq!(e.to_string(), "unknown command \"x\"");
        assert_eq!(e.kind(), ErrorKind::Syntax);
        let e = ApiError::from(ReloadError::NoFile);
        assert_eq!(e.kind(), ErrorKind::Config);
        let e = ApiError::Resolve {
            what: "label 100 eos".into(),
            source: ResolveError::UnknownInterface {
                name: "port9".into(),
                known: "port0".into(),
            },
        };
        assert_eq!(
            e.to_string(),
            "label 100 eos: unknown interface \"port9\" (interfaces: port0)"
        );
        assert_eq!(e.kind(), ErrorKind::NotFound);
    }
}

//! What a check can end in, and whether trying again later may help. Messages name the connector's
//! transport, the HTTP status, the header or variable to look at; never a header value, a token
//! or an environment value (they pass through [`crate::Redactor`] before they get here).

use crate::TransportKind;
use std::time::Duration;

/// How far a handshake got when it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Opening the connection (the SSE stream, the child process).
    Connect,
    /// The handshake: `server/discover`, or `initialize` and its response (the id stays
    /// `initialize`, as stored and shown).
    Initialize,
    /// `tools/list`, page after page.
    ListTools,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Connect => "connect",
            Stage::Initialize => "initialize",
            Stage::ListTools => "tools/list",
        }
    }
}

/// Why a check failed. [`CheckError::is_retryable`] splits the variants: the retryable ones are
/// what the seed's ladder exists for (a server still starting, an npx cache race); the terminal
/// ones do not become right in 30 seconds (a rejected credential, a missing command).
/// Why a check failed, as `--json`, the window and the health store name it (the snake_case
/// id; the health store keeps it as that text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum CheckErrorKind {
    Unreachable,
    TimedOut,
    Rejected,
    ServerError,
    NeedsAuthorization,
    CredentialRejected,
    Protocol,
    SpawnFailed,
    Exited,
    MissingConfiguration,
    Invalid,
}

impl CheckErrorKind {
    /// The snake_case id, as serialized and stored.
    pub fn id(self) -> &'static str {
        match self {
            CheckErrorKind::Unreachable => "unreachable",
            CheckErrorKind::TimedOut => "timed_out",
            CheckErrorKind::Rejected => "rejected",
            CheckErrorKind::ServerError => "server_error",
            CheckErrorKind::NeedsAuthorization => "needs_authorization",
            CheckErrorKind::CredentialRejected => "credential_rejected",
            CheckErrorKind::Protocol => "protocol",
            CheckErrorKind::SpawnFailed => "spawn_failed",
            CheckErrorKind::Exited => "exited",
            CheckErrorKind::MissingConfiguration => "missing_configuration",
            CheckErrorKind::Invalid => "invalid",
        }
    }
}

impl std::fmt::Display for CheckErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// Compares with the snake_case id (`kind() == "unreachable"`).
impl PartialEq<&str> for CheckErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.id() == *other
    }
}

/// Stored as its id.
impl rusqlite::ToSql for CheckErrorKind {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(rusqlite::types::ToSqlOutput::from(self.id()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// Nothing answered: refused, reset, DNS, closed before a response (EOF). No fallback.
    #[error("cannot reach the server over {transport}: {message}")]
    Unreachable {
        transport: TransportKind,
        message: String,
    },
    /// A stage ran past its time limit. No fallback: a server that hangs is not a server that
    /// speaks the other transport.
    #[error("{} took longer than {} ms over {transport}", .stage.as_str(), .after.as_millis())]
    TimedOut {
        transport: TransportKind,
        stage: Stage,
        after: Duration,
    },
    /// The server answered the handshake but not as this transport (405, 400, 404, 406, 415, or
    /// a response that is not an MCP stream). The other HTTP transport may work.
    #[error("the server rejected the {transport} handshake{}: {message}", .status.map(|s| format!(" with HTTP {s}")).unwrap_or_default())]
    Rejected {
        transport: TransportKind,
        status: Option<u16>,
        message: String,
    },
    /// The server failed (HTTP 5xx) or refused for a reason no transport changes (403).
    #[error("the server answered HTTP {status} over {transport}: {message}")]
    ServerError {
        transport: TransportKind,
        status: u16,
        message: String,
    },
    /// 403 `insufficient_scope`: the credential is good but grants less than the server asks
    /// for. Only an authorization for more mends it.
    #[error("the server answered 403 over {transport}: it needs more access than the credential grants (\"{scope}\")")]
    NeedsMoreAccess {
        transport: TransportKind,
        scope: String,
    },
    /// 401 from a server Patchbay can authorize (OAuth-capable).
    #[error("{message}")]
    NeedsAuthorization { message: String },
    /// 401 from a server that takes a static credential in a header: the value is wrong.
    #[error("{message}")]
    CredentialRejected {
        /// The headers that carry the credential.
        headers: Vec<String>,
        /// The `${VAR}`s those headers are built from.
        variables: Vec<String>,
        message: String,
    },
    /// Connected, but the conversation was not MCP (a JSON-RPC error to `initialize`, a
    /// malformed message, an error answering `tools/list`).
    #[error("the server broke the MCP handshake over {transport}: {message}")]
    Protocol {
        transport: TransportKind,
        message: String,
    },
    /// The stdio command could not be started at all (not found, not executable).
    #[error("cannot start `{command}`: {message}")]
    SpawnFailed { command: String, message: String },
    /// The stdio server exited (or closed its stdout) before the handshake finished.
    #[error("the server process exited{} before the handshake finished{}", .code.map(|c| format!(" with status {c}")).unwrap_or_default(), if .stderr.is_empty() { String::new() } else { format!("; it said: {}", .stderr) })]
    Exited { code: Option<i32>, stderr: String },
    /// A `${VAR}` the entry needs has no value: nothing was started.
    #[error("missing configuration: {} has no value", .variables.join(", "))]
    MissingConfiguration { variables: Vec<String> },
    /// The entry cannot be checked as written (an invalid URL, an invalid header).
    #[error("{message}")]
    Invalid { message: String },
}

impl CheckError {
    /// Whether the same check may pass later without anyone changing anything.
    pub fn is_retryable(&self) -> bool {
        match self {
            CheckError::Unreachable { .. }
            | CheckError::TimedOut { .. }
            | CheckError::Protocol { .. }
            | CheckError::Exited { .. } => true,
            // 5xx, 408 and 429 are the server's passing state; 403 is a decision.
            CheckError::ServerError { status, .. } => {
                *status >= 500 || *status == 408 || *status == 429
            }
            CheckError::Rejected { .. }
            | CheckError::NeedsAuthorization { .. }
            | CheckError::NeedsMoreAccess { .. }
            | CheckError::CredentialRejected { .. }
            | CheckError::SpawnFailed { .. }
            | CheckError::MissingConfiguration { .. }
            | CheckError::Invalid { .. } => false,
        }
    }

    /// A stable machine-readable kind for `--json`, the window and the health store.
    pub fn kind(&self) -> CheckErrorKind {
        match self {
            CheckError::Unreachable { .. } => CheckErrorKind::Unreachable,
            CheckError::TimedOut { .. } => CheckErrorKind::TimedOut,
            CheckError::Rejected { .. } => CheckErrorKind::Rejected,
            CheckError::ServerError { .. } => CheckErrorKind::ServerError,
            // What mends it is an authorization (for more), as for a 401.
            CheckError::NeedsAuthorization { .. } | CheckError::NeedsMoreAccess { .. } => {
                CheckErrorKind::NeedsAuthorization
            }
            CheckError::CredentialRejected { .. } => CheckErrorKind::CredentialRejected,
            CheckError::Protocol { .. } => CheckErrorKind::Protocol,
            CheckError::SpawnFailed { .. } => CheckErrorKind::SpawnFailed,
            CheckError::Exited { .. } => CheckErrorKind::Exited,
            CheckError::MissingConfiguration { .. } => CheckErrorKind::MissingConfiguration,
            CheckError::Invalid { .. } => CheckErrorKind::Invalid,
        }
    }

    /// The HTTP status the server answered with, when it answered one.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            CheckError::Rejected { status, .. } => *status,
            CheckError::ServerError { status, .. } => Some(*status),
            CheckError::NeedsMoreAccess { .. } => Some(403),
            CheckError::NeedsAuthorization { .. } | CheckError::CredentialRejected { .. } => {
                Some(401)
            }
            _ => None,
        }
    }

    /// Reachable but spoke another transport: the one case the other HTTP transport is tried.
    pub fn warrants_fallback(&self) -> bool {
        matches!(self, CheckError::Rejected { .. })
    }
}

/// The health store (its own SQLite file) could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    #[error("cannot create {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the health database failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the health database cannot be migrated: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    #[error("the health database holds an unreadable row: {0}")]
    Corrupt(String),
    #[error("cannot start the health board's writer thread: {0}")]
    Writer(#[source] std::io::Error),
    #[error("cannot {action} the call spool {path}: {source}")]
    Spool {
        action: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the call spool {path} stayed locked by another process for 5 s")]
    SpoolBusy { path: String },
    #[error("the call spool {path} is full (nothing has read the health board for a long time); calls are dropped until it is read")]
    SpoolFull { path: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_and_terminal_split() {
        let t = TransportKind::StreamableHttp;
        let retryable = [
            CheckError::Unreachable {
                transport: t,
                message: "refused".into(),
            },
            CheckError::TimedOut {
                transport: t,
                stage: Stage::Initialize,
                after: Duration::from_secs(1),
            },
            CheckError::Exited {
                code: Some(1),
                stderr: "ENOTEMPTY".into(),
            },
            CheckError::ServerError {
                transport: t,
                status: 502,
                message: "bad gateway".into(),
            },
        ];
        for e in &retryable {
            assert!(e.is_retryable(), "{e}");
        }
        let terminal = [
            CheckError::NeedsAuthorization {
                message: "401".into(),
            },
            CheckError::CredentialRejected {
                headers: vec!["X-API-Key".into()],
                variables: vec![],
                message: "401".into(),
            },
            CheckError::SpawnFailed {
                command: "nope".into(),
                message: "not found".into(),
            },
            CheckError::ServerError {
                transport: t,
                status: 403,
                message: "forbidden".into(),
            },
            CheckError::MissingConfiguration {
                variables: vec!["TOKEN".into()],
            },
        ];
        for e in &terminal {
            assert!(!e.is_retryable(), "{e}");
        }
    }

    #[test]
    fn messages_name_status_and_stage() {
        let e = CheckError::Rejected {
            transport: TransportKind::StreamableHttp,
            status: Some(405),
            message: "Method Not Allowed".into(),
        };
        assert_eq!(
            e.to_string(),
            "the server rejected the streamable-http handshake with HTTP 405: Method Not Allowed"
        );
        assert_eq!(e.http_status(), Some(405));
        let e = CheckError::TimedOut {
            transport: TransportKind::Sse,
            stage: Stage::ListTools,
            after: Duration::from_millis(1500),
        };
        assert_eq!(
            e.to_string(),
            "tools/list took longer than 1500 ms over sse"
        );
        let e = CheckError::Exited {
            code: Some(1),
            stderr: String::new(),
        };
        assert_eq!(
            e.to_string(),
            "the server process exited with status 1 before the handshake finished"
        );
    }

    #[test]
    fn every_kind_serializes_and_is_stored_as_its_id() {
        use rusqlite::ToSql;
        for kind in [
            CheckErrorKind::Unreachable,
            CheckErrorKind::TimedOut,
            CheckErrorKind::Rejected,
            CheckErrorKind::ServerError,
            CheckErrorKind::NeedsAuthorization,
            CheckErrorKind::CredentialRejected,
            CheckErrorKind::Protocol,
            CheckErrorKind::SpawnFailed,
            CheckErrorKind::Exited,
            CheckErrorKind::MissingConfiguration,
            CheckErrorKind::Invalid,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.id());
            let stored = kind.to_sql().unwrap();
            assert_eq!(
                stored,
                rusqlite::types::ToSqlOutput::from(kind.id()),
                "{kind:?}"
            );
        }
    }
}

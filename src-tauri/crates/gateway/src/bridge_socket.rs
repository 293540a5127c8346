//! The running gateway's socket for Patchbay's own stdio bridges. A client that launches
//! `patchbay connect` with a stripped environment leaves out the session bus, so the keychain
//! may not answer the bridge; the app (or `patchbay gateway serve`) that runs beside it can. So
//! `connect` first asks the gateway serving its data directory for the connector resolved (its
//! headers and bearer: a [`Handoff`]) and, later, for a renewal, and never opens the keychain
//! itself; only when nothing answers there does it read the vault (the fallback, as before).
//!
//! The socket is [`SOCKET_FILE`] in the data directory (a bridge finds it the way it finds the
//! data directory: `--data-dir`, or the platform's default), made 0600, and a peer of another
//! user is refused. One JSON line each way, each bounded in time. A gateway with a `--catalog`
//! of its own answers only bridges given that same catalog ([`Answer::NotMine`] otherwise: the
//! bridge resolves by itself).

use crate::stdio::Handoff;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The socket's file in the data directory.
pub const SOCKET_FILE: &str = "bridge.sock";
/// How long a peer may take to send its request (and a bridge to write it).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long resolving may take (the vault, the catalog and the clients' configs: local).
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a renewal may take: a refresh at the authorization server, or a step-up that waits
/// for the user's consent in the browser (the connector's default `timeout_ms`).
pub const RENEW_TIMEOUT: Duration = Duration::from_secs(130);

/// What a bridge asks.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// The connector `target` (a name or URL) resolved.
    Resolve {
        target: String,
        catalog: Option<PathBuf>,
    },
    /// A new bearer for `target`: after `refused` was refused, or for `scope` (a step-up).
    Renew {
        target: String,
        catalog: Option<PathBuf>,
        refused: Option<String>,
        scope: Option<String>,
    },
}

/// What the gateway answers.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Resolved(Box<Handoff>),
    /// The renew command's answer line (`{"bearer": …}` or `{"error": …}`).
    Renewed(serde_json::Value),
    /// It cannot be bridged: `reason` as [`crate::UpstreamError::reason`], and why.
    Refused {
        reason: String,
        message: String,
    },
    /// Another catalog than this gateway's: the bridge resolves by itself.
    NotMine,
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answer::Resolved(h) => f.debug_tuple("Resolved").field(h).finish(),
            Answer::Renewed(_) => f.write_str("Renewed([redacted])"),
            Answer::Refused { reason, .. } => {
                f.debug_struct("Refused").field("reason", reason).finish()
            }
            Answer::NotMine => f.write_str("NotMine"),
        }
    }
}

/// The socket's path for the data directory `data_dir`.
pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join(SOCKET_FILE)
}

#[cfg(unix)]
pub use unix::{ask, serve};

#[cfg(unix)]
mod unix {
    use super::*;
    use crate::upstream::Upstreams;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::{UnixListener, UnixStream};

    /// Serve the socket for `upstreams`' data directory until the returned future is dropped.
    /// A socket left by a gateway that is gone is replaced; one a live gateway answers on is
    /// left to it (this gateway then serves none, said in the log).
    pub async fn serve(upstreams: Upstreams) {
        let path = socket_path(&upstreams.patchbay().paths.data_dir);
        if std::os::unix::net::UnixStream::connect(&path).is_ok() {
            tracing::info!(
                "another gateway answers bridges at {}; this one does not",
                path.display()
            );
            return;
        }
        let _ = std::fs::remove_file(&path);
        let listener = match UnixListener::bind(&path) {
            Ok(listener) => listener,
            Err(e) => {
                tracing::warn!("bridges cannot ask this gateway ({}: {e})", path.display());
                return;
            }
        };
        {
            use std::os::unix::fs::PermissionsExt;
            if let Err(e) = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            {
                tracing::warn!(
                    "{} cannot be made private ({e}); not served",
                    path.display()
                );
                let _ = std::fs::remove_file(&path);
                return;
            }
        }
        let own_uid = rustix::process::getuid().as_raw();
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let peer = stream.peer_cred().map(|c| c.uid()).ok();
            if peer != Some(own_uid) {
                tracing::warn!(?peer, "a bridge request from another user was refused");
                continue;
            }
            tokio::spawn(answer_one(upstreams.clone(), stream));
        }
    }

    async fn answer_one(upstreams: Upstreams, stream: UnixStream) {
        let (read, mut write) = stream.into_split();
        let mut line = String::new();
        let mut reader = BufReader::new(read);
        let read = tokio::time::timeout(REQUEST_TIMEOUT, reader.read_line(&mut line)).await;
        if !matches!(read, Ok(Ok(n)) if n > 0) {
            return;
        }
        let answer = match serde_json::from_str::<Request>(&line) {
            Ok(request) => handle(upstreams, request).await,
            Err(e) => Answer::Refused {
                reason: "cannot_start".into(),
                message: format!("the bridge's request is not one this gateway reads: {e}"),
            },
        };
        let Ok(mut text) = serde_json::to_string(&answer) else {
            return;
        };
        text.push('\n');
        let _ = write.write_all(text.as_bytes()).await;
    }

    /// The request answered as `patchbay connect` (and its `--renew`) would answer it here.
    pub(crate) async fn handle(upstreams: Upstreams, request: Request) -> Answer {
        let (target, catalog) = match &request {
            Request::Resolve { target, catalog }
            | Request::Renew {
                target, catalog, ..
            } => (target.clone(), catalog.clone()),
        };
        // Both absolute: the bridge sends its `--catalog` so.
        if catalog != upstreams.patchbay().paths.catalog_override {
            return Answer::NotMine;
        }
        let resolving = upstreams.clone();
        let upstream = tokio::task::spawn_blocking(move || resolving.resolve(&target))
            .await
            .unwrap_or_else(|e| {
                Err(crate::UpstreamError::Unavailable {
                    name: String::new(),
                    reason: format!("resolving it crashed: {e}"),
                })
            });
        match request {
            Request::Resolve { .. } => match upstream {
                Ok(upstream) => {
                    let health = crate::stdio::health_file(upstreams.patchbay());
                    Answer::Resolved(Box::new(Handoff::new(&upstream, Vec::new(), Some(health))))
                }
                Err(e) => Answer::Refused {
                    reason: e.reason().into(),
                    message: e.to_string(),
                },
            },
            Request::Renew { refused, scope, .. } => {
                let refused = refused.map(patchbay_vault::Secret::new);
                let scope = scope.unwrap_or_default();
                Answer::Renewed(crate::stdio::renewal(upstream, refused.as_ref(), &scope).await)
            }
        }
    }

    /// Ask the gateway serving `data_dir`: its answer, or `None` when none listens there (or it
    /// did not answer within `within`): then the bridge does the work itself.
    pub fn ask(data_dir: &Path, request: &Request, within: Duration) -> Option<Answer> {
        use std::io::{BufRead, Write};
        let path = socket_path(data_dir);
        let mut stream = std::os::unix::net::UnixStream::connect(&path).ok()?;
        stream.set_read_timeout(Some(within)).ok()?;
        stream.set_write_timeout(Some(REQUEST_TIMEOUT)).ok()?;
        let mut line = serde_json::to_string(request).ok()?;
        line.push('\n');
        stream.write_all(line.as_bytes()).ok()?;
        let mut answer = String::new();
        std::io::BufReader::new(stream)
            .read_line(&mut answer)
            .ok()?;
        match serde_json::from_str(&answer) {
            Ok(answer) => Some(answer),
            Err(e) => {
                tracing::warn!(
                    "the gateway's answer at {} is unreadable ({e})",
                    path.display()
                );
                None
            }
        }
    }
}

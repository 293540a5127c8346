//! The lean bridge: `patchbay connect` resolves the connector (catalog, clients, vault: the heavy
//! part) and hands the result to a small process of its own (`patchbay-bridge`, exec'd in its
//! place) that only bridges. That process's memory is the bridge's alone, a fraction of one that
//! also loaded the catalog, the clients' configs and the vault. It renews a refused credential by
//! running `patchbay connect --renew NAME`, which goes through [`Upstream::on_unauthorized`] (the
//! refresher of record's locked transaction) and answers with the bearer to use.
//!
//! The [`Handoff`] crosses a pipe between Patchbay's own processes (never a file, an argument or
//! the environment); its secrets become [`Secret`]s on arrival.

use super::{health_hook_at, run_for, stdout_handle, CallHook, Credentials, StdioError};
use crate::upstream::{with_bearer, Upstream, UpstreamError, UpstreamTransport};
use patchbay_core::StepUpBudget;
use patchbay_vault::Secret;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// What the lean bridge needs: the upstream resolved, its credential, how to renew it and where
/// the health board is.
#[derive(Serialize, Deserialize)]
pub struct Handoff {
    pub connector: String,
    pub url: String,
    pub timeout_ms: Option<u64>,
    /// The connector's own headers, `${VAR}`s expanded.
    pub headers: Vec<(String, String)>,
    /// The OAuth bearer, when the vault holds one.
    pub bearer: Option<String>,
    /// The command that renews the bearer: `patchbay [options] connect --renew NAME`.
    pub renew: Vec<String>,
    pub health_file: Option<PathBuf>,
    /// The connector speaks the legacy HTTP+SSE transport.
    #[serde(default)]
    pub sse: bool,
}

impl std::fmt::Debug for Handoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handoff")
            .field("connector", &self.connector)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Handoff {
    pub fn new(upstream: &Upstream, renew: Vec<String>, health_file: Option<PathBuf>) -> Handoff {
        Handoff {
            connector: upstream.name().to_owned(),
            url: upstream.url().to_owned(),
            timeout_ms: upstream
                .timeout()
                .map(|t| t.as_millis().try_into().unwrap_or(u64::MAX)),
            headers: upstream
                .headers()
                .iter()
                .map(|(k, v)| (k.clone(), v.expose().to_owned()))
                .collect(),
            bearer: upstream.bearer().map(|b| b.expose().to_owned()),
            renew,
            health_file,
            sse: upstream.transport() == UpstreamTransport::Sse,
        }
    }
}

/// The lean bridge's credentials: the handed-off headers and bearer, renewed by the renew command.
pub struct Delegated {
    connector: String,
    url: String,
    timeout: Option<Duration>,
    headers: Vec<(String, Secret)>,
    bearer: RwLock<Option<Secret>>,
    renew: Vec<String>,
    /// Step-ups run in the renew command's process, a new one each time: the session's bound
    /// on them is kept here.
    step_ups: StepUpBudget,
}

impl From<Handoff> for Delegated {
    fn from(h: Handoff) -> Delegated {
        Delegated {
            connector: h.connector,
            url: h.url,
            timeout: h.timeout_ms.map(Duration::from_millis),
            headers: h
                .headers
                .into_iter()
                .map(|(k, v)| (k, Secret::new(v)))
                .collect(),
            bearer: RwLock::new(h.bearer.map(Secret::new)),
            renew: h.renew,
            step_ups: StepUpBudget::default(),
        }
    }
}

impl Credentials for Delegated {
    fn connector(&self) -> &str {
        &self.connector
    }

    fn url(&self) -> &str {
        &self.url
    }

    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// As [`Upstream::request_headers`]: the entry's, then the bearer unless the entry sends its
    /// own `Authorization`.
    fn headers(&self) -> Vec<(String, Secret)> {
        with_bearer(self.headers.clone(), self.bearer())
    }

    fn bearer(&self) -> Option<Secret> {
        self.bearer
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    async fn renew(&self, rejected: Option<Secret>) -> Result<(), String> {
        self.run_renew_command(rejected, None).await
    }

    async fn step_up(&self, scope: String) -> Result<(), String> {
        self.step_ups
            .take(&self.connector, &scope)
            .map_err(|e| e.to_string())?;
        self.run_renew_command(None, Some(scope)).await
    }
}

impl Delegated {
    /// Runs the renew command off the async threads and keeps the bearer it answers with.
    async fn run_renew_command(
        &self,
        rejected: Option<Secret>,
        step_up_scope: Option<String>,
    ) -> Result<(), String> {
        let command = self.renew.clone();
        let connector = self.connector.clone();
        let renewed = tokio::task::spawn_blocking(move || {
            run_renew(&command, rejected.as_ref(), step_up_scope.as_deref())
        })
        .await
        .map_err(|e| format!("renewing {connector}'s credential crashed: {e}"))??;
        *self.bearer.write().unwrap_or_else(|p| p.into_inner()) = Some(renewed);
        Ok(())
    }
}

/// Runs the renew command: the refused bearer on its stdin (one line, empty for none), then the
/// scope of a step-up (one line, empty for none); one JSON line back: `{"bearer": ...}` or
/// `{"error": "..."}`.
fn run_renew(
    command: &[String],
    rejected: Option<&Secret>,
    step_up_scope: Option<&str>,
) -> Result<Secret, String> {
    let (program, args) = command
        .split_first()
        .ok_or("no renew command was handed over")?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot run `{program}` to renew the credential: {e}"))?;
    {
        let mut stdin = child.stdin.take().expect("piped");
        let line = rejected.map(Secret::expose).unwrap_or("");
        // A child that exits without reading is answered by its stdout below. A scope is one
        // line of scope tokens: a line break in it cannot come from a valid challenge.
        let scope = step_up_scope.unwrap_or("").replace(['\r', '\n'], " ");
        let _ = writeln!(stdin, "{line}\n{scope}");
    }
    let output = child
        .wait_with_output()
        .map_err(|e| format!("renewing the credential: {e}"))?;
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).map_err(|_| {
        format!(
            "renewing the credential failed ({}); see the messages above",
            output.status
        )
    })?;
    match (answer["bearer"].as_str(), answer["error"].as_str()) {
        (Some(bearer), _) => Ok(Secret::new(bearer)),
        (None, Some(error)) => Err(error.to_owned()),
        _ => Err("renewing the credential answered nothing usable".into()),
    }
}

/// The renew command's answer line (`patchbay connect --renew`, in the full `patchbay`), and
/// the gateway's bridge socket's: a new bearer through [`Upstream::on_unauthorized`] (the
/// refresher of record's locked transaction) after `rejected` was refused, or through
/// [`Upstream::on_insufficient_scope`] for `scope` (a step-up, when not empty).
/// `{"bearer": …}` or `{"error": …}`.
pub async fn renewal(
    upstream: Result<Upstream, UpstreamError>,
    rejected: Option<&Secret>,
    scope: &str,
) -> serde_json::Value {
    let renewed = match upstream {
        Ok(upstream) => match scope.is_empty() {
            true => upstream.on_unauthorized(rejected).await,
            false => upstream.on_insufficient_scope(scope).await,
        },
        Err(e) => Err(e),
    };
    match renewed {
        Ok(bearer) => serde_json::json!({ "bearer": bearer.expose() }),
        Err(e) => serde_json::json!({ "error": e.to_string() }),
    }
}

/// The lean bridge's main: runs [`run`] on stdin and stdout with the handed-off credentials.
pub async fn run_handoff(handoff: Handoff) -> Result<(), StdioError> {
    let hook: Option<CallHook> = match &handoff.health_file {
        Some(file) => match health_hook_at(file) {
            Ok(hook) => Some(hook),
            Err(e) => {
                tracing::warn!("the health board cannot be opened ({e}); calls are not recorded");
                None
            }
        },
        None => None,
    };
    tracing::info!(
        connector = handoff.connector,
        "bridging stdio to {}",
        handoff.url
    );
    let stdout = stdout_handle().map_err(StdioError::Stdout)?;
    let transport = match handoff.sse {
        true => UpstreamTransport::Sse,
        false => UpstreamTransport::StreamableHttp,
    };
    let credentials = Arc::new(Delegated::from(handoff));
    run_for(transport, credentials, hook, tokio::io::stdin(), stdout).await
}

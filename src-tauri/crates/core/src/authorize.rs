//! The one driver of the OAuth flow for every surface (CLI, tray, window, deep link): start an
//! authorization for a catalog connector, finish it from the loopback receiver or from a pasted
//! URL or code, and let a caller wait for it.
//!
//! Safety: only catalog servers that are OAuth-capable can be authorized, and the server URL
//! always comes from the catalog, never from the caller. The receiver runs only while a flow
//! that completes through it is pending.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use patchbay_catalog::{CatalogItem, ServerEntry};
use patchbay_oauth::receiver::{self, CallbackOutcome, CallbackParams, Receiver, ReceiverError};
use patchbay_oauth::{flow, pasteback, token, Http, OAuthError};
use tokio::sync::watch;

use crate::{CoreError, Patchbay};

/// How the Authorizer runs flows.
#[derive(Debug, Clone)]
pub struct AuthorizerOptions {
    /// The receiver's port (3118 unless configured).
    pub port: u16,
    /// Every outbound request's bound (30 s; tests inject less).
    pub http_timeout: Duration,
    /// How long a pending flow waits (10 minutes).
    pub flow_ttl: Duration,
    /// Start the loopback receiver for flows that redirect to it. When false (tests, or a
    /// surface that only pastes), such flows complete by paste-back.
    pub use_receiver: bool,
}

impl Default for AuthorizerOptions {
    fn default() -> Self {
        AuthorizerOptions {
            port: flow::DEFAULT_PORT,
            http_timeout: patchbay_oauth::http::DEFAULT_TIMEOUT,
            flow_ttl: flow::FLOW_TTL,
            use_receiver: true,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// Open the consent page in the system browser (otherwise the caller shows the URL).
    pub open_browser: bool,
}

/// How a started flow will finish. Serialized into [`Started`] as `completion: "receiver" |
/// "paste_back"` beside `redirect_uri` (and `why` for paste-back).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "completion", rename_all = "snake_case")]
pub enum Completion {
    /// The browser comes back to our receiver; nothing to do but approve.
    Receiver { redirect_uri: String },
    /// Paste the redirected URL (or the code) into `complete_pasted`.
    PasteBack { redirect_uri: String, why: String },
}

/// A started authorization. What the window receives from `start_authorization`:
/// `{ connector, authorize_url, completion: "receiver" | "paste_back", redirect_uri, why?,
/// notice, expires_at }`.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Started {
    pub connector: String,
    pub authorize_url: String,
    #[serde(flatten)]
    pub completion: Completion,
    /// Something the user should know (the port was taken, the browser did not open).
    pub notice: Option<String>,
    pub expires_at: DateTime<Utc>,
}

/// Drives authorizations over a shared [`Patchbay`]. Cheap to clone.
#[derive(Clone)]
pub struct Authorizer {
    inner: Arc<Inner>,
}

struct Inner {
    patchbay: Arc<Patchbay>,
    http: Http,
    options: AuthorizerOptions,
    receiver: tokio::sync::Mutex<Option<Receiver>>,
    /// The last outcome per connector, for `wait_for`; bumped `changed` on every write.
    outcomes: Mutex<HashMap<String, Result<(), String>>>,
    changed: watch::Sender<u64>,
    /// Runtime bridges: when set, a stored credential is written through to every runtime the
    /// connector is bridged to (issue 4).
    bridges: Mutex<Option<Arc<crate::Bridges>>>,
}

impl Authorizer {
    pub fn new(patchbay: Arc<Patchbay>, options: AuthorizerOptions) -> Authorizer {
        // Flows abandoned by an earlier run drop their sealed verifiers and secrets now, not
        // only when the next authorization starts. Best effort: a locked store keeps them
        // (sealed) until the next sweep.
        if let Err(error) = patchbay.vault().sweep_expired_flows(patchbay.now()) {
            tracing::warn!("cannot sweep expired authorizations: {error}");
        }
        Authorizer {
            inner: Arc::new(Inner {
                patchbay,
                http: Http::new(options.http_timeout),
                options,
                receiver: tokio::sync::Mutex::new(None),
                outcomes: Mutex::new(HashMap::new()),
                changed: watch::channel(0).0,
                bridges: Mutex::new(None),
            }),
        }
    }

    pub fn patchbay(&self) -> &Arc<Patchbay> {
        &self.inner.patchbay
    }

    /// Write every credential an authorization stores through to the runtimes its connector is
    /// bridged to (Claude Code, Codex). Off until set, so tests never touch a real home.
    pub fn set_bridges(&self, bridges: Arc<crate::Bridges>) {
        *lock(&self.inner.bridges) = Some(bridges);
    }

    /// Starts authorizing the catalog connector `name`: discovery, client, PKCE, the pending
    /// flow; then the receiver (when the flow redirects to it) and the browser (when asked).
    pub async fn start(&self, name: &str, opts: StartOptions) -> Result<Started, CoreError> {
        let inner = &self.inner;
        let patchbay = &inner.patchbay;
        tracing::info!(connector = name, "starting an authorization");
        let entry = authorizable_entry(patchbay, name)?;
        let resolve = |var: &str| patchbay.resolve_variable(var);
        let credential_key = match entry.credential_key(&resolve) {
            Ok(Some(key)) => key,
            Ok(None) => return Err(not_authorizable(name, "it is not a remote server")),
            Err(missing) => {
                return Err(CoreError::NotAuthorizable(format!(
                    "{name} needs {} before it can be authorized; store it with `patchbay secret set {}`",
                    missing.join(", "),
                    missing[0]
                )))
            }
        };
        let server_url = patchbay_catalog::expand(
            entry.transport.url().expect("remote entries have a URL"),
            &resolve,
        )
        .map_err(|missing| {
            CoreError::NotAuthorizable(format!("{name} needs {}", missing.join(", ")))
        })?;
        let clients_path = patchbay.paths.oauth_clients_file();
        let clients = patchbay_oauth::load_clients_file(&clients_path)?;
        let clients_file = clients_path.display().to_string();
        let request = flow::FlowRequest {
            connector: name,
            server_url: &server_url,
            credential_key,
            catalog: entry.oauth.as_ref(),
            pre_registered: clients.get(name),
            clients_file: &clients_file,
            resolve: &resolve,
            port: inner.options.port,
            now: patchbay.now(),
            ttl: inner.options.flow_ttl,
        };
        let begun = flow::begin(&inner.http, patchbay.vault(), &request).await?;
        lock(&inner.outcomes).remove(name);

        let mut notice = None;
        let completion = match begun.completion {
            flow::Completion::PasteBack { why } => Completion::PasteBack {
                redirect_uri: begun.redirect_uri.clone(),
                why,
            },
            flow::Completion::Receiver if !inner.options.use_receiver => Completion::PasteBack {
                redirect_uri: begun.redirect_uri.clone(),
                why: "the loopback receiver is not used here".into(),
            },
            flow::Completion::Receiver => match self.ensure_receiver().await {
                Ok(()) => {
                    self.stop_receiver_at(begun.expires_at);
                    Completion::Receiver {
                        redirect_uri: begun.redirect_uri.clone(),
                    }
                }
                Err(e) => {
                    let why = e.to_string();
                    notice = Some(why.clone());
                    Completion::PasteBack {
                        redirect_uri: begun.redirect_uri.clone(),
                        why,
                    }
                }
            },
        };
        if opts.open_browser {
            if let Err(e) = patchbay_oauth::browser::open(&begun.authorize_url) {
                notice = Some(match notice {
                    Some(n) => format!("{n}. {e}"),
                    None => e.to_string(),
                });
            }
        }
        Ok(Started {
            connector: begun.connector,
            authorize_url: begun.authorize_url,
            completion,
            notice,
            expires_at: begun.expires_at,
        })
    }

    /// Finishes a flow of `connector` from pasted text: the full redirected URL (its state is
    /// checked exactly as the receiver checks it), or the bare code, which belongs to the
    /// connector's single pending flow.
    pub async fn complete_pasted(&self, connector: &str, pasted: &str) -> Result<(), CoreError> {
        let inner = &self.inner;
        let vault = inner.patchbay.vault();
        let now = inner.patchbay.now();
        let mut params =
            pasteback::parse(pasted).map_err(|e| CoreError::InvalidInput(e.to_string()))?;
        match &params.state {
            None if params.error.is_none() => {
                let states = vault.pending_states_for(connector, now)?;
                match states.as_slice() {
                    [one] => params.state = Some(one.clone()),
                    [] => {
                        return Err(CoreError::NoPendingAuthorization {
                            connector: connector.to_string(),
                        })
                    }
                    _ => {
                        return Err(CoreError::InvalidInput(format!(
                            "{} authorizations of {connector} are pending; paste the full redirected address so its state picks the right one",
                            states.len()
                        )))
                    }
                }
            }
            Some(state) => {
                // A state of another connector's flow is not this connector's: leave it alone.
                if let Some(flow) = vault.pending_flow(state, now)? {
                    if flow.connector != connector {
                        return Err(OAuthError::UnknownState.into());
                    }
                }
            }
            None => {}
        }
        let result = self.inner.finish(params).await;
        result.map(drop)
    }

    /// Waits until a flow of `connector` completes (through the receiver or a paste), up to
    /// `timeout`. Returns that completion's error when it failed.
    pub async fn wait_for(&self, connector: &str, timeout: Duration) -> Result<(), CoreError> {
        let mut rx = self.inner.changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(outcome) = lock(&self.inner.outcomes).remove(connector) {
                return outcome.map_err(|message| CoreError::AuthorizationFailed {
                    connector: connector.to_string(),
                    message,
                });
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                Ok(Err(_)) | Err(_) => {
                    return Err(CoreError::WaitTimedOut {
                        connector: connector.to_string(),
                        after: timeout,
                    })
                }
            }
        }
    }

    /// Whether the receiver is listening now.
    pub async fn receiver_running(&self) -> bool {
        self.inner.receiver.lock().await.is_some()
    }

    /// Stops the receiver whatever is pending (the app is quitting).
    pub async fn shutdown(&self) {
        if let Some(r) = self.inner.receiver.lock().await.take() {
            r.shutdown().await;
        }
    }

    async fn ensure_receiver(&self) -> Result<(), ReceiverError> {
        let mut guard = self.inner.receiver.lock().await;
        if guard.is_some() {
            return Ok(());
        }
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let handler: receiver::CallbackHandler = Arc::new(move |params: CallbackParams| {
            let weak = weak.clone();
            Box::pin(async move {
                match weak.upgrade() {
                    Some(inner) => {
                        let outcome = page(inner.finish(params).await);
                        // Stop once idle, after this page has gone out.
                        tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            inner.stop_receiver_if_idle().await;
                        });
                        outcome
                    }
                    None => CallbackOutcome::Rejected {
                        title: "Patchbay is shutting down".into(),
                        message: "Start the authorization again.".into(),
                    },
                }
            })
        });
        *guard = Some(receiver::start(self.inner.options.port, handler).await?);
        Ok(())
    }

    /// Stops the receiver after `expires_at` if no flow is pending by then.
    fn stop_receiver_at(&self, expires_at: DateTime<Utc>) {
        let weak = Arc::downgrade(&self.inner);
        let wait = (expires_at - self.inner.patchbay.now())
            .to_std()
            .unwrap_or_default()
            + Duration::from_secs(1);
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            if let Some(inner) = weak.upgrade() {
                inner.stop_receiver_if_idle().await;
            }
        });
    }
}

impl Inner {
    /// Completes a callback and records the outcome for its connector (when the state named a
    /// flow). Unknown states record nothing: they belong to no flow.
    async fn finish(&self, params: CallbackParams) -> Result<token::Completed, CoreError> {
        let vault = self.patchbay.vault();
        let now = self.patchbay.now();
        let connector = match &params.state {
            Some(state) => vault.pending_flow(state, now)?.map(|f| f.connector),
            None => None,
        };
        let result = token::complete(&self.http, vault, params, now).await;
        // Runtime bridges (issue 4): the new credential goes where the runtimes read it. Best
        // effort: the authorization itself succeeded either way.
        if let Ok(done) = &result {
            let bridges = lock(&self.bridges).clone();
            if let Some(bridges) = bridges {
                if let Err(e) = bridges.write_through(&done.connector) {
                    tracing::warn!(
                        connector = done.connector,
                        "cannot bridge the credential: {e}"
                    );
                }
            }
        }
        if let Some(connector) = connector {
            let recorded = match &result {
                Ok(_) => Ok(()),
                // A check that left the flow pending is not the flow's end.
                Err(
                    OAuthError::MissingCode
                    | OAuthError::MissingIss { .. }
                    | OAuthError::WrongIss { .. },
                ) => return result.map_err(CoreError::from),
                Err(e) => Err(e.to_string()),
            };
            lock(&self.outcomes).insert(connector, recorded);
            self.changed.send_modify(|n| *n += 1);
        }
        result.map_err(CoreError::from)
    }

    async fn stop_receiver_if_idle(&self) {
        // Hold the receiver lock while deciding: `start` stores its flow before it takes this
        // lock in `ensure_receiver`, so either we see the new flow here or it restarts the
        // receiver after us. Deciding first and locking second could stop a receiver that a
        // flow started in between is waiting on.
        let mut guard = self.receiver.lock().await;
        let now = self.patchbay.now();
        let idle = self
            .patchbay
            .vault()
            .pending_flows(now)
            .map(|flows| {
                !flows.iter().any(|f| {
                    flow::is_receiver_redirect(&f.redirect_uri, self.options.port) && !f.manual
                })
            })
            .unwrap_or(false);
        if idle {
            if let Some(r) = guard.take() {
                r.shutdown().await;
            }
        }
    }
}

/// The page the browser gets for a callback.
fn page(result: Result<token::Completed, CoreError>) -> CallbackOutcome {
    match result {
        Ok(done) => CallbackOutcome::Completed {
            title: "Authorized".into(),
            message: format!(
                "Patchbay stored the credential for {}. You can close this tab.{}",
                done.connector,
                if done.one_shot {
                    " The server issued no refresh token, so it will need authorizing again when the token lapses."
                } else {
                    ""
                }
            ),
        },
        Err(CoreError::OAuth(e @ OAuthError::Denied { .. })) => CallbackOutcome::Rejected {
            title: "Authorization refused".into(),
            message: e.to_string(),
        },
        Err(e) => CallbackOutcome::Rejected {
            title: "Authorization not completed".into(),
            message: e.to_string(),
        },
    }
}

fn not_authorizable(name: &str, why: &str) -> CoreError {
    CoreError::NotAuthorizable(format!("{name} cannot be authorized: {why}"))
}

/// The catalog entry `name`, when Patchbay may run an OAuth flow for it.
fn authorizable_entry(patchbay: &Patchbay, name: &str) -> Result<ServerEntry, CoreError> {
    match patchbay.catalog().get(name) {
        None => Err(CoreError::NotAuthorizable(format!(
            "no connector named {name} in the catalog; only catalog servers can be authorized"
        ))),
        Some(CatalogItem::Invalid(invalid)) => Err(not_authorizable(
            name,
            &format!("its catalog entry is invalid ({})", invalid.error),
        )),
        Some(CatalogItem::Server(entry)) => {
            if let Some(reason) = &entry.unavailable {
                return Err(not_authorizable(
                    name,
                    &format!("it is declared unavailable: {reason}"),
                ));
            }
            if !entry.transport.is_remote() {
                return Err(not_authorizable(name, "it is a local (stdio) server"));
            }
            if let Some(header) = entry.static_credential_headers().first() {
                return Err(not_authorizable(
                    name,
                    &format!("it sends a static credential in the {header} header, and no OAuth flow can mint one"),
                ));
            }
            Ok(entry.clone())
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(completion: Completion, notice: Option<&str>) -> serde_json::Value {
        serde_json::to_value(Started {
            connector: "notion".into(),
            authorize_url: "https://as.example/authorize?state=s".into(),
            completion,
            notice: notice.map(str::to_owned),
            expires_at: "2026-11-30T09:10:00Z".parse().unwrap(),
        })
        .unwrap()
    }

    #[test]
    fn a_started_flow_serializes_flat_for_the_window() {
        let receiver = started(
            Completion::Receiver {
                redirect_uri: "http://127.0.0.1:3118/callback".into(),
            },
            None,
        );
        assert_eq!(
            receiver,
            serde_json::json!({
                "connector": "notion",
                "authorize_url": "https://as.example/authorize?state=s",
                "completion": "receiver",
                "redirect_uri": "http://127.0.0.1:3118/callback",
                "notice": null,
                "expires_at": "2026-11-30T09:10:00Z",
            })
        );
        let paste = started(
            Completion::PasteBack {
                redirect_uri: "https://app.example/cb".into(),
                why: "the redirect is not Patchbay's receiver".into(),
            },
            Some("port 3118 is taken"),
        );
        assert_eq!(paste["completion"], "paste_back");
        assert_eq!(paste["redirect_uri"], "https://app.example/cb");
        assert_eq!(paste["why"], "the redirect is not Patchbay's receiver");
        assert_eq!(paste["notice"], "port 3118 is taken");
    }
}

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
    /// Patchbay's client metadata document (`PATCHBAY_CLIENT_METADATA_URL`, else the published
    /// default), offered to servers that take one instead of a registration.
    pub client_metadata: patchbay_oauth::ClientMetadataUrl,
}

impl Default for AuthorizerOptions {
    fn default() -> Self {
        AuthorizerOptions {
            port: flow::DEFAULT_PORT,
            http_timeout: patchbay_oauth::http::DEFAULT_TIMEOUT,
            flow_ttl: flow::FLOW_TTL,
            use_receiver: true,
            client_metadata: patchbay_oauth::ClientMetadataUrl::default(),
        }
    }
}

impl AuthorizerOptions {
    /// The defaults with what the environment sets (`PATCHBAY_CLIENT_METADATA_URL`); a value
    /// that is not a usable URL is an error naming the variable.
    pub fn from_env() -> Result<AuthorizerOptions, CoreError> {
        Ok(AuthorizerOptions {
            client_metadata: patchbay_oauth::ClientMetadataUrl::from_env()?,
            ..AuthorizerOptions::default()
        })
    }

    /// [`Self::from_env`] for a process that must start whatever the setting says (the app, the
    /// stdio bridge): a bad value is logged and the published document used instead.
    pub fn from_env_or_default() -> AuthorizerOptions {
        Self::from_env().unwrap_or_else(|e| {
            tracing::warn!("{e}; using the published client metadata document");
            AuthorizerOptions::default()
        })
    }
}

#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// Open the consent page in the system browser (otherwise the caller shows the URL).
    pub open_browser: bool,
    /// A step-up: the scopes a 403 `insufficient_scope` (or a 401) challenge named. The flow asks
    /// for them together with those the connector's grant asked for.
    pub step_up_scope: Option<String>,
}

impl StartOptions {
    /// The consent page opens in the system browser (the window's Authorize, a bridge's
    /// step-up), no step-up scope.
    pub fn in_browser() -> StartOptions {
        StartOptions {
            open_browser: true,
            step_up_scope: None,
        }
    }
}

/// How many step-up authorizations one connector gets in one session (an [`Authorizer`], a
/// bridge) before the next is refused: a server that keeps answering `insufficient_scope`
/// whatever is granted must not loop the user through consent pages.
pub const MAX_STEP_UPS: u32 = 3;

/// The step-ups a session has started per connector, bounded by [`MAX_STEP_UPS`]: the one place
/// that rule is kept, for the Authorizer and for a bridge whose step-ups run in another process.
#[derive(Debug, Default)]
pub struct StepUpBudget {
    started: Mutex<HashMap<String, u32>>,
}

impl StepUpBudget {
    /// Takes one step-up of `connector` for `scope`: its number, or the error that says the
    /// budget is spent (nothing is started then).
    pub fn take(&self, connector: &str, scope: &str) -> Result<u32, CoreError> {
        let mut started = lock(&self.started);
        let count = started.entry(connector.to_string()).or_insert(0);
        if *count >= MAX_STEP_UPS {
            return Err(CoreError::Refused {
                connector: connector.to_string(),
                why: format!(
                    "{connector} still answers insufficient_scope (it wants \"{scope}\") after {MAX_STEP_UPS} authorizations for more access; not asking again. Check what the account may grant, then run `patchbay authorize {connector}`"
                ),
            });
        }
        *count += 1;
        Ok(*count)
    }
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
    /// Step-up authorizations started per connector.
    step_ups: StepUpBudget,
    /// The flows this Authorizer started, per connector, so `wait_for` can tell a flow whose
    /// state was spent elsewhere (another Patchbay's receiver, a forged callback at another
    /// port) from one still waiting on its browser.
    own_flows: Mutex<HashMap<String, Vec<OwnFlow>>>,
    /// The states whose callback this Authorizer is finishing now (taken from the vault, the
    /// code exchange under way): gone from the vault but not spent elsewhere.
    finishing: Mutex<std::collections::HashSet<String>>,
    /// Per connector, the authorization server its last start found no way to register with:
    /// where a client the user enters is kept (see [`Authorizer::enter_client`]). The caller
    /// names only the connector, so a window cannot aim a client at another issuer.
    needs_client: Mutex<HashMap<String, NeededClient>>,
}

/// What a user must create at a provider that offers no way to register Patchbay (the spec's
/// last resort, "ask the user"): an OAuth client at `issuer`, registered with `redirect_uri`.
/// Sent to the window inside the error of `start_authorization`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct NeededClient {
    pub issuer: String,
    pub redirect_uri: String,
}

/// A flow this Authorizer started. No `Debug`: the state finishes the flow.
struct OwnFlow {
    state: String,
    credential_key: patchbay_catalog::CredentialKey,
    started_at: DateTime<Utc>,
    /// Past it the flow left the vault by expiring, not elsewhere: the wait's own bound says so.
    expires_at: DateTime<Utc>,
    /// Its consent page, to open again (not a secret: the browser has it).
    authorize_url: String,
}

/// How often `wait_for` looks whether its flows are still pending in the (shared) vault.
const SPENT_CHECK_INTERVAL: Duration = Duration::from_millis(500);

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
                step_ups: StepUpBudget::default(),
                own_flows: Mutex::new(HashMap::new()),
                finishing: Mutex::new(std::collections::HashSet::new()),
                needs_client: Mutex::new(HashMap::new()),
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
        // More access the server asked for and did not get is asked for now too (the union
        // with what was granted), whoever started this authorization.
        let step_up_scope = match &opts.step_up_scope {
            Some(scope) => Some(scope.clone()),
            None => patchbay.vault().wanted_scope(&credential_key)?,
        };
        let prior_scopes = match &step_up_scope {
            Some(_) => patchbay
                .vault()
                .grant(&credential_key)?
                .and_then(|g| g.scopes),
            None => None,
        };
        let step_up = step_up_scope.as_deref().map(|challenged| flow::StepUp {
            prior: prior_scopes.as_deref(),
            challenged,
        });
        let clients_path = patchbay.paths.oauth_clients_file();
        let clients = patchbay_oauth::load_clients_file(&clients_path)?;
        let clients_file = clients_path.display().to_string();
        let request = flow::FlowRequest {
            connector: name,
            server_url: &server_url,
            credential_key: credential_key.clone(),
            catalog: entry.oauth.as_ref(),
            pre_registered: clients.get(name),
            clients_file: &clients_file,
            resolve: &resolve,
            client_metadata: &inner.options.client_metadata,
            step_up,
            port: inner.options.port,
            now: patchbay.now(),
            ttl: inner.options.flow_ttl,
        };
        let begun = match flow::begin(&inner.http, patchbay.vault(), &request).await {
            Ok(begun) => begun,
            Err(error) => {
                if let patchbay_oauth::OAuthError::NoClient {
                    issuer,
                    redirect_uri,
                    ..
                } = &error
                {
                    lock(&inner.needs_client).insert(
                        name.to_string(),
                        NeededClient {
                            issuer: issuer.clone(),
                            redirect_uri: redirect_uri.clone(),
                        },
                    );
                }
                return Err(error.into());
            }
        };
        lock(&inner.needs_client).remove(name);
        lock(&inner.outcomes).remove(name);
        lock(&inner.own_flows)
            .entry(name.to_string())
            .or_default()
            .push(OwnFlow {
                state: begun.state.clone(),
                credential_key,
                started_at: request.now,
                expires_at: begun.expires_at,
                authorize_url: begun.authorize_url.clone(),
            });

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
            if let Some(ended) = self.inner.ended_elsewhere(connector) {
                return ended;
            }
            let tick = (tokio::time::Instant::now() + SPENT_CHECK_INTERVAL).min(deadline);
            match tokio::time::timeout_at(tick, rx.changed()).await {
                Ok(Ok(())) => continue,
                Err(_) if tick < deadline => continue,
                Ok(Err(_)) | Err(_) => {
                    return Err(CoreError::WaitTimedOut {
                        connector: connector.to_string(),
                        after: timeout,
                    })
                }
            }
        }
    }

    /// Keeps a client the user entered for `connector`, whose last [`Self::start`] found no way
    /// to register Patchbay (the spec's last resort: ask the user): its id and secret in the
    /// vault, as the client for that authorization server and redirect URI, used by the next
    /// authorization there like a registration Patchbay made. An empty secret means a public
    /// client.
    pub fn enter_client(
        &self,
        connector: &str,
        client_id: &str,
        client_secret: Option<patchbay_vault::Secret>,
    ) -> Result<(), CoreError> {
        let needed = lock(&self.inner.needs_client).get(connector).cloned();
        let Some(needed) = needed else {
            return Err(CoreError::InvalidInput(format!(
                "{connector} has not asked for a client: authorize it first, and enter a client only when Patchbay says its server offers no way to register"
            )));
        };
        let client_id = client_id.trim();
        if client_id.is_empty() || client_id.chars().any(char::is_control) {
            return Err(CoreError::InvalidInput(
                "a client id is one line of text, not empty".into(),
            ));
        }
        let patchbay = &self.inner.patchbay;
        patchbay
            .vault()
            .put_registration(&patchbay_vault::Registration {
                issuer: needed.issuer.clone(),
                redirect_uri: needed.redirect_uri.clone(),
                client_id: client_id.to_string(),
                client_secret: client_secret.filter(|s| !s.expose().is_empty()),
                token_auth_method: None,
                created_at: patchbay.now(),
            })?;
        lock(&self.inner.needs_client).remove(connector);
        tracing::info!(
            connector,
            issuer = needed.issuer,
            "kept the client the user entered"
        );
        Ok(())
    }

    /// The issuer `connector`'s server names now, when it is not the one its grant came from
    /// (SEP-2352: the resource moved to another authorization server, whose registration and
    /// consent Patchbay does not have). `None` when it did not move, when there is no grant to
    /// compare with, or when the catalog pins the authorization server. Discovery runs anew.
    pub async fn moved_authorization_server(
        &self,
        connector: &str,
    ) -> Result<Option<String>, CoreError> {
        let patchbay = &self.inner.patchbay;
        let entry = authorizable_entry(patchbay, connector)?;
        if entry
            .oauth
            .as_ref()
            .is_some_and(|o| o.auth_server_metadata_url.is_some())
        {
            return Ok(None);
        }
        let resolve = |var: &str| patchbay.resolve_variable(var);
        let Some(key) = entry.credential_key(&resolve).ok().flatten() else {
            return Ok(None);
        };
        let Some(grant) = patchbay.vault().grant(&key)? else {
            return Ok(None);
        };
        let Some(url) = entry
            .transport
            .url()
            .and_then(|u| patchbay_catalog::expand(u, &resolve).ok())
        else {
            return Ok(None);
        };
        let found = patchbay_oauth::discovery::discover(&self.inner.http, &url, None).await?;
        Ok((found.server.issuer != grant.issuer).then_some(found.server.issuer))
    }

    /// Authorizes `connector` for a running session whose credential was refused and could not be
    /// renewed (the authorization server changed, the grant was revoked): discovery anew, the
    /// consent page in the system browser, and a wait of up to `wait`. Refused when the flow can
    /// only finish by paste-back.
    pub async fn authorize_for_session(
        &self,
        connector: &str,
        wait: Duration,
    ) -> Result<(), CoreError> {
        let started = self.start(connector, StartOptions::in_browser()).await?;
        self.wait_for_session(connector, started, wait, "needs authorizing")
            .await
    }

    async fn wait_for_session(
        &self,
        connector: &str,
        started: Started,
        wait: Duration,
        what: &str,
    ) -> Result<(), CoreError> {
        match started.completion {
            Completion::Receiver { .. } => self.wait_for(connector, wait).await,
            Completion::PasteBack { why, .. } => Err(CoreError::Refused {
                connector: connector.to_string(),
                why: format!(
                    "{connector} {what}, and its authorization finishes by paste-back ({why}); run `patchbay authorize {connector}` in a terminal"
                ),
            }),
        }
    }

    /// A step-up for a running session (the bridge, the gateway): authorizes `connector` again for
    /// the scopes a 403 `insufficient_scope` named together with those asked for before, in the
    /// system browser, and waits up to `wait` for consent. A flow that can only finish by
    /// paste-back is refused (nobody is at a terminal to paste). See [`Self::start_step_up`].
    pub async fn step_up(
        &self,
        connector: &str,
        challenged_scope: &str,
        wait: Duration,
    ) -> Result<(), CoreError> {
        let started = self
            .start_step_up(connector, challenged_scope, true)
            .await?;
        let what = format!("needs more access (\"{challenged_scope}\")");
        self.wait_for_session(connector, started, wait, &what).await
    }

    /// Starts a step-up's authorization (the union of scopes, see [`StartOptions::step_up_scope`]).
    /// Each connector gets at most [`MAX_STEP_UPS`] of them from this Authorizer
    /// ([`StepUpBudget`]); the next is refused with a message saying so, never started.
    pub async fn start_step_up(
        &self,
        connector: &str,
        challenged_scope: &str,
        open_browser: bool,
    ) -> Result<Started, CoreError> {
        let attempt = self.inner.step_ups.take(connector, challenged_scope)?;
        tracing::info!(
            connector,
            scope = challenged_scope,
            attempt,
            "authorizing again for more access (step-up)"
        );
        self.start(
            connector,
            StartOptions {
                open_browser,
                step_up_scope: Some(challenged_scope.to_string()),
            },
        )
        .await
    }

    /// Cancels authorizing `connector`: every flow this Authorizer started for it leaves the
    /// vault (its sealed verifier with it), so a late callback or paste finds nothing; a
    /// `wait_for` on it ends as cancelled; the receiver stops once no other flow waits on it.
    /// Returns how many flows were still pending.
    pub async fn cancel(&self, connector: &str) -> Result<usize, CoreError> {
        let flows = lock(&self.inner.own_flows)
            .remove(connector)
            .unwrap_or_default();
        let vault = self.inner.patchbay.vault();
        let mut pending = 0;
        for flow in &flows {
            if vault.delete_pending_flow(&flow.state)? {
                pending += 1;
            }
        }
        if !flows.is_empty() {
            lock(&self.inner.outcomes).insert(
                connector.to_string(),
                Err(format!("authorizing {connector} was cancelled")),
            );
            self.inner.changed.send_modify(|n| *n += 1);
        }
        tracing::info!(connector, pending, "cancelled the authorization");
        self.inner.stop_receiver_if_idle().await;
        Ok(pending)
    }

    /// Opens the consent page of `connector`'s newest pending flow again (its tab was closed,
    /// the browser did not come up). The page is the one the flow started with.
    pub fn reopen(&self, connector: &str) -> Result<(), CoreError> {
        let now = self.inner.patchbay.now();
        // Still pending in the vault: not finished, cancelled or expired since.
        let pending = self
            .inner
            .patchbay
            .vault()
            .pending_states_for(connector, now)?;
        let url = lock(&self.inner.own_flows)
            .get(connector)
            .and_then(|flows| {
                flows
                    .iter()
                    .rev()
                    .find(|f| pending.contains(&f.state))
                    .map(|f| f.authorize_url.clone())
            });
        let Some(url) = url else {
            return Err(CoreError::NoPendingAuthorization {
                connector: connector.to_string(),
            });
        };
        patchbay_oauth::browser::open(&url).map_err(|e| CoreError::Refused {
            connector: connector.to_string(),
            why: e.to_string(),
        })
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
        let finishing = params
            .state
            .clone()
            .filter(|_| connector.is_some())
            .map(|state| Finishing::new(&self.finishing, state));
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
            if let Some(done) = &finishing {
                // Finished here, well or not: no longer a flow that could end elsewhere.
                if let Some(flows) = lock(&self.own_flows).get_mut(&connector) {
                    flows.retain(|f| f.state != done.state);
                }
            }
            // A refused redirect (no code, a missing or wrong `iss`) leaves the flow pending in the
            // vault, so a paste of the right address can still finish it; but whoever waits on
            // the browser is told now: that browser will not come back a second time.
            let recorded = result.as_ref().map(drop).map_err(|e| e.to_string());
            lock(&self.outcomes).insert(connector, recorded);
            self.changed.send_modify(|n| *n += 1);
        }
        drop(finishing);
        result.map_err(CoreError::from)
    }

    /// For `wait_for`: the end of a wait on `connector` whose flows (those this Authorizer
    /// started) all left the vault without a callback here, or `None` while one is still pending
    /// or being finished here. Another Patchbay finished or spent them: a receiver at another
    /// port got the browser (the credential is newer than the flow: done), or a forged callback
    /// there used the state (this browser can no longer finish it: said now, not after the
    /// wait). Forgets the flows it reports on.
    fn ended_elsewhere(&self, connector: &str) -> Option<Result<(), CoreError>> {
        let vault = self.patchbay.vault();
        let now = self.patchbay.now();
        let mut own = lock(&self.own_flows);
        let flows = own.get(connector).filter(|f| !f.is_empty())?;
        let finishing = lock(&self.finishing);
        for flow in flows {
            if finishing.contains(&flow.state) || now >= flow.expires_at {
                return None;
            }
            match vault.pending_flow(&flow.state, now) {
                Ok(Some(_)) => return None,
                Ok(None) => {}
                // The vault cannot say: keep waiting, the wait's own bound still holds.
                Err(_) => return None,
            }
        }
        drop(finishing);
        let first_started = flows.iter().map(|f| f.started_at).min()?;
        let stored_since = flows.iter().any(|f| {
            vault
                .credential_row(&f.credential_key)
                .ok()
                .flatten()
                .is_some_and(|row| row.updated_at >= first_started)
        });
        own.remove(connector);
        Some(if stored_since {
            tracing::info!(
                connector,
                "the authorization finished in another Patchbay process"
            );
            Ok(())
        } else {
            Err(CoreError::AuthorizationFailed {
                connector: connector.to_string(),
                message: "its state was used by another Patchbay process (a callback that reached another port, or another `authorize` run), so the browser can no longer finish this one; start the authorization again".into(),
            })
        })
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

/// Marks a state as being finished here for as long as it lives.
struct Finishing<'a> {
    set: &'a Mutex<std::collections::HashSet<String>>,
    state: String,
}

impl<'a> Finishing<'a> {
    fn new(set: &'a Mutex<std::collections::HashSet<String>>, state: String) -> Finishing<'a> {
        lock(set).insert(state.clone());
        Finishing { set, state }
    }
}

impl Drop for Finishing<'_> {
    fn drop(&mut self) {
        lock(self.set).remove(&self.state);
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
    let catalog = patchbay.catalog();
    match catalog.get(name) {
        None => Err(CoreError::NotAuthorizable(format!(
            "no connector named {name} in the catalog{}; only catalog servers can be authorized",
            catalog
                .did_you_mean(name)
                .map(|near| format!(" (did you mean \"{near}\"?)"))
                .unwrap_or_default()
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

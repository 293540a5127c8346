//! The connection check wired to Patchbay: a catalog entry resolved the way the status resolves
//! it (`${VAR}`s from the vault, then the environment; an OAuth-capable server's stored token
//! as its bearer), checked for real by `patchbay-check`, recorded on the health board
//! (`health.sqlite` in the data directory), and, when the other HTTP transport answered, written
//! back to the user catalog on request. The Test button, `patchbay check` and the periodic check
//! all come through [`Checker`].

use crate::{CoreError, Patchbay, Paths};
use chrono::{DateTime, Utc};
use patchbay_catalog::{expand, Catalog, CatalogItem, CredentialKey, ServerEntry, Transport};
use patchbay_check::health::{rfc3339, rfc3339_opt};
use patchbay_check::{
    check_paced, npm_cache, Attempt, AuthKind, CheckError, CheckOutcome, CheckTarget, Degraded,
    DegradedRule, Endpoint, ErrorSummary, HealthStats, HealthStore, HttpEndpoint, KnownTools,
    ServerIdentity, StdioLaunch, Timeouts, ToolInfo, Transition, TransportKind, HEALTH_FILE,
};
use patchbay_status::Action;
use patchbay_vault::Secret;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How many connectors `check_all` checks at once: enough that one hung server does not hold up
/// the board, few enough that a catalog of npx servers does not start a dozen installs together.
const PARALLEL_CHECKS: usize = 4;

/// The checker's settings.
#[derive(Debug, Clone, Default)]
pub struct CheckerOptions {
    /// The defaults; an entry's `timeout_ms` replaces their per-request limits.
    pub timeouts: Timeouts,
    pub rule: DegradedRule,
    /// The waits between an entry's retries (real time unless a test injects its own).
    pub pacing: patchbay_check::Pacing,
}

/// Checks connectors and keeps their health. Cheap to clone (everything is shared).
#[derive(Clone)]
pub struct Checker {
    patchbay: Arc<Patchbay>,
    health: Arc<HealthStore>,
    options: CheckerOptions,
    /// One check per connector at a time: a periodic check and a click on Test must not start
    /// the same stdio server (and its npx install) twice.
    in_flight: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
    /// When set, an expired but renewable credential is refreshed before the check presents it,
    /// so a lapsed access token is not mistaken for a server that wants authorizing.
    refresher: Option<crate::Refresher>,
}

/// What the window offers when the other HTTP transport answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct WriteBackOffer {
    /// The transport to write (`sse` or `streamable-http`).
    pub transport: TransportKind,
    /// The file it would be written to.
    pub file: String,
}

/// One connector's check, as `patchbay check --json` prints it and the window draws it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ConnectorCheck {
    pub connector: String,
    #[serde(serialize_with = "rfc3339")]
    pub checked_at: DateTime<Utc>,
    pub ok: bool,
    /// Why nothing was contacted (declared unavailable, missing configuration, an invalid
    /// entry, a keychain that did not answer); `null` when the check ran.
    pub skipped: Option<String>,
    /// The transport the catalog names (`stdio`, `streamable-http`, `sse`).
    pub configured_transport: Option<TransportKind>,
    /// The transport that answered, or the last one tried.
    pub transport: Option<TransportKind>,
    /// Set when the configured transport was rejected and this one answered.
    pub fell_back_to: Option<TransportKind>,
    pub write_back: Option<WriteBackOffer>,
    /// Connect, `initialize` and `tools/list` of the transport that answered.
    pub latency_ms: Option<u64>,
    pub server: Option<ServerIdentity>,
    /// The tools offered, named `<connector>.<tool>`.
    pub tools: Vec<ToolInfo>,
    pub error: Option<ErrorSummary>,
    /// What to do about it, one sentence.
    pub advice: Option<String>,
    /// `authorize` only for an OAuth-capable server's 401; `set_variable` / `edit_catalog` for a
    /// rejected static credential or missing configuration.
    pub action: Option<Action>,
    pub attempts: Vec<Attempt>,
    /// What this check did to the failure streak; `null` when skipped.
    pub transition: Option<Transition>,
    /// Set while the connector is degraded (after this check).
    pub degraded: Option<Degraded>,
    /// Counted failures in a row (after this check).
    pub consecutive_failures: u32,
    pub health: HealthStats,
}

/// One row of the health board.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BoardRow {
    /// Also in `stats`, which the JSON flattens: serialized once, from there.
    #[serde(skip)]
    pub connector: String,
    pub transport: String,
    #[serde(flatten)]
    pub stats: HealthStats,
    pub degraded: Option<Degraded>,
    pub consecutive_failures: u32,
    /// When a failing connector's next check counts (the backoff); `null` when healthy.
    #[serde(serialize_with = "rfc3339_opt")]
    pub next_check_at: Option<DateTime<Utc>>,
    /// The tools it offered at its last successful check.
    pub tools: Option<KnownTools>,
}

/// The health board: every catalog connector, checked or not, by name.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HealthBoard {
    #[serde(serialize_with = "rfc3339")]
    pub generated_at: DateTime<Utc>,
    pub connectors: Vec<BoardRow>,
}

/// A transport written back to a catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WrittenBack {
    pub connector: String,
    pub transport: TransportKind,
    pub file: PathBuf,
    /// The stored OAuth credential, re-filed under the key the new transport computes (the
    /// transport is part of the key), as `[from, to]`.
    pub credential_moved: Option<(String, String)>,
}

/// Why a connector was not contacted.
struct Skip(String, Option<Action>);

impl Checker {
    /// Opens (creating when missing) `health.sqlite` in the data directory.
    pub fn new(patchbay: Arc<Patchbay>, options: CheckerOptions) -> Result<Checker, CoreError> {
        let health = HealthStore::open(&patchbay.paths.data_dir.join(HEALTH_FILE))?;
        Ok(Checker {
            patchbay,
            health: Arc::new(health),
            options,
            in_flight: Arc::default(),
            refresher: None,
        })
    }

    /// Refresh an expired, renewable credential before checking with it.
    pub fn with_refresher(mut self, refresher: crate::Refresher) -> Checker {
        self.refresher = Some(refresher);
        self
    }

    /// The refresher's transaction, when the connector's credential has lapsed and can renew.
    async fn renew_if_expired(&self, name: &str) {
        let Some(refresher) = &self.refresher else {
            return;
        };
        let now = self.patchbay.now();
        let lapsed = self.patchbay.vault().credential_rows().is_ok_and(|rows| {
            rows.iter()
                .any(|r| r.server_name == name && r.has_refresh_token && r.is_expired(now))
        });
        if lapsed {
            if let Err(e) = refresher.refresh(name).await {
                tracing::warn!(connector = name, "cannot refresh before the check: {e}");
            }
        }
    }

    pub fn health_store(&self) -> &HealthStore {
        &self.health
    }

    /// Check the catalog connector `name` for real. Checks even one declared unavailable (the
    /// way to find out whether the declaration can go). `Err` only when there is no such
    /// connector or the health database failed; a server that fails is an `Ok` with `ok: false`.
    pub async fn check(&self, name: &str) -> Result<ConnectorCheck, CoreError> {
        let catalog = self.patchbay.catalog();
        let Some(item) = catalog.get(name) else {
            return Err(CoreError::UnknownConnector {
                name: name.to_owned(),
                looked_in: "in the catalog".into(),
            });
        };
        self.check_item(&catalog, item, true).await
    }

    /// Check every connector in use, a few at a time; those that cannot be started (declared
    /// unavailable, missing configuration, invalid) are reported as skipped. In catalog order.
    /// The gallery (catalog entries not in use) is never checked.
    pub async fn check_all(&self) -> Result<Vec<ConnectorCheck>, CoreError> {
        let catalog = Arc::new(self.patchbay.catalog());
        let in_use = self.patchbay.in_use();
        let names: Vec<String> = catalog
            .items
            .iter()
            .map(|i| i.name().0.clone())
            .filter(|n| in_use.contains(n))
            .collect();
        self.check_names(catalog, names).await
    }

    /// The periodic check: every connector whose turn has come (its backoff passed when failing,
    /// `interval` since its last check when healthy). Skipped connectors are not returned.
    pub async fn check_due(&self, interval: Duration) -> Result<Vec<ConnectorCheck>, CoreError> {
        let catalog = Arc::new(self.patchbay.catalog());
        let in_use = self.patchbay.in_use();
        let now = self.patchbay.now();
        let mut due = Vec::new();
        for item in &catalog.items {
            let CatalogItem::Server(entry) = item else {
                continue;
            };
            let name = entry.name.as_str();
            if !in_use.contains(name) {
                continue;
            }
            let streak = self.health.streak(name)?;
            let last = self.health.stats(name)?.last_check_at;
            if self.options.rule.due(&streak, last, interval, now) {
                due.push(name.to_owned());
            }
        }
        let checks = self.check_names(catalog, due).await?;
        Ok(checks.into_iter().filter(|c| c.skipped.is_none()).collect())
    }

    async fn check_names(
        &self,
        catalog: Arc<Catalog>,
        names: Vec<String>,
    ) -> Result<Vec<ConnectorCheck>, CoreError> {
        let semaphore = Arc::new(tokio::sync::Semaphore::new(PARALLEL_CHECKS));
        let mut tasks = tokio::task::JoinSet::new();
        for (i, name) in names.into_iter().enumerate() {
            let this = self.clone();
            let catalog = catalog.clone();
            let semaphore = semaphore.clone();
            tasks.spawn(async move {
                let _permit = semaphore.acquire_owned().await;
                let item = catalog.get(&name).expect("named from this catalog");
                (i, this.check_item(&catalog, item, false).await)
            });
        }
        let mut results = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            let (i, result) = joined.map_err(|e| CoreError::TaskFailed {
                task: "a connection check",
                message: e.to_string(),
            })?;
            results.push((i, result?));
        }
        results.sort_by_key(|(i, _)| *i);
        Ok(results.into_iter().map(|(_, c)| c).collect())
    }

    async fn check_item(
        &self,
        catalog: &Catalog,
        item: &CatalogItem,
        explicit: bool,
    ) -> Result<ConnectorCheck, CoreError> {
        let name = item.name().as_str();
        let entry = match item {
            CatalogItem::Server(entry) => entry,
            CatalogItem::Invalid(invalid) => {
                return self.skipped(
                    name,
                    None,
                    Skip(
                        format!("the catalog entry is invalid: {}", invalid.error),
                        Some(Action::EditCatalog),
                    ),
                )
            }
        };
        let configured = kind_of(&entry.transport);
        if let (Some(reason), false) = (&entry.unavailable, explicit) {
            return self.skipped(
                name,
                Some(configured),
                Skip(format!("declared unavailable: {reason}"), None),
            );
        }
        self.renew_if_expired(name).await;
        let target = match self.target_for(catalog, entry) {
            Ok(target) => target,
            Err(skip) => return self.skipped(name, Some(configured), skip),
        };

        let gate = {
            let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            in_flight.entry(name.to_owned()).or_default().clone()
        };
        let _one_at_a_time = gate.lock().await;
        let outcome = check_paced(&target, &self.options.timeouts, &self.options.pacing).await;
        let now = self.patchbay.now();
        let recorded = self.health.record(&outcome, &self.options.rule, now)?;
        let health = self.health.stats(name)?;
        Ok(self.report(entry, &target, outcome, recorded, health, now))
    }

    fn skipped(
        &self,
        name: &str,
        configured: Option<TransportKind>,
        Skip(reason, action): Skip,
    ) -> Result<ConnectorCheck, CoreError> {
        let streak = self.health.streak(name)?;
        Ok(ConnectorCheck {
            connector: name.to_owned(),
            checked_at: self.patchbay.now(),
            ok: false,
            advice: Some(match action {
                Some(Action::SetVariable) => format!("Nothing was contacted: {reason}. Store it with `patchbay secret set NAME`, or set it in the environment."),
                Some(Action::EditCatalog) => format!("Nothing was contacted: {reason}. Fix the entry in the catalog."),
                _ => format!("Nothing was contacted: {reason}."),
            }),
            skipped: Some(reason),
            configured_transport: configured,
            transport: None,
            fell_back_to: None,
            write_back: None,
            latency_ms: None,
            server: None,
            tools: Vec::new(),
            error: None,
            action,
            attempts: Vec::new(),
            transition: None,
            degraded: streak.degraded.clone(),
            consecutive_failures: streak.failures,
            health: self.health.stats(name)?,
        })
    }

    fn report(
        &self,
        entry: &ServerEntry,
        target: &CheckTarget,
        outcome: CheckOutcome,
        recorded: patchbay_check::Recorded,
        health: HealthStats,
        now: DateTime<Utc>,
    ) -> ConnectorCheck {
        let name = entry.name.as_str();
        let transport = Some(outcome.transport());
        let write_back = outcome.fell_back_to.map(|t| WriteBackOffer {
            transport: t,
            file: self.write_back_file().display().to_string(),
        });
        let (latency_ms, server, tools, error, advice, action) = match &outcome.result {
            Ok(h) => {
                let advice = outcome.fell_back_to.map(|t| {
                    format!(
                        "It answers over {} ({}), not {} as configured; run `patchbay check {name} --write-back` to save {} to your catalog.",
                        t.label(),
                        t,
                        outcome.configured,
                        t
                    )
                });
                (
                    Some(h.latency.as_millis().try_into().unwrap_or(u64::MAX)),
                    Some(h.server.clone()),
                    h.tools.clone(),
                    None,
                    advice,
                    None,
                )
            }
            Err(e) => {
                let (advice, action) = advice_for(entry, target, e);
                (
                    None,
                    None,
                    Vec::new(),
                    Some(ErrorSummary::from(e)),
                    Some(advice),
                    action,
                )
            }
        };
        ConnectorCheck {
            connector: name.to_owned(),
            checked_at: now,
            ok: outcome.ok(),
            skipped: None,
            configured_transport: Some(outcome.configured),
            transport,
            fell_back_to: outcome.fell_back_to,
            write_back,
            latency_ms,
            server,
            tools,
            error,
            advice,
            action,
            attempts: outcome.attempts,
            transition: Some(recorded.transition),
            degraded: recorded.streak.degraded.clone(),
            consecutive_failures: recorded.streak.failures,
            health,
        }
    }

    /// The health board for every catalog connector, by name.
    pub fn board(&self) -> Result<HealthBoard, CoreError> {
        let catalog = self.patchbay.catalog();
        let mut connectors = Vec::new();
        for item in &catalog.items {
            let name = item.name().as_str();
            let streak = self.health.streak(name)?;
            connectors.push(BoardRow {
                connector: name.to_owned(),
                transport: match item {
                    CatalogItem::Server(e) => e.transport.display_name().to_owned(),
                    CatalogItem::Invalid(_) => "unknown".to_owned(),
                },
                stats: self.health.stats(name)?,
                degraded: streak.degraded,
                consecutive_failures: streak.failures,
                next_check_at: streak.next_strike_at,
                tools: self.health.tools(name)?,
            });
        }
        Ok(HealthBoard {
            generated_at: self.patchbay.now(),
            connectors,
        })
    }

    /// The catalog file a write-back goes to: the `--catalog` file when one is used alone,
    /// else the user catalog.
    /// [`Checker::write_back`] with the transport as the window spells it (`streamable-http`,
    /// `sse`).
    pub fn write_back_named(&self, name: &str, transport: &str) -> Result<WrittenBack, CoreError> {
        match TransportKind::parse(transport) {
            Some(kind @ (TransportKind::StreamableHttp | TransportKind::Sse)) => {
                self.write_back(name, kind)
            }
            _ => Err(CoreError::InvalidInput(format!(
                "\"{transport}\" is not an HTTP transport; expected streamable-http or sse"
            ))),
        }
    }

    pub fn write_back_file(&self) -> PathBuf {
        let paths = &self.patchbay.paths;
        paths
            .catalog_override
            .clone()
            .unwrap_or_else(|| paths.user_catalog())
    }

    /// Write `transport` as `name`'s type to the user catalog (the `--catalog` file when one is
    /// used alone), keeping every other key as it is. An entry that lives in the shipped catalog
    /// is copied over whole first, since a user entry replaces the default one. An OAuth
    /// credential is re-filed under the key the new transport computes.
    pub fn write_back(
        &self,
        name: &str,
        transport: TransportKind,
    ) -> Result<WrittenBack, CoreError> {
        let catalog = self.patchbay.catalog();
        let entry = match catalog.get(name) {
            Some(CatalogItem::Server(entry)) => entry.clone(),
            Some(CatalogItem::Invalid(_)) => {
                return Err(CoreError::InvalidEntry {
                    name: name.to_owned(),
                    doing: "writing to it",
                })
            }
            None => {
                return Err(CoreError::UnknownConnector {
                    name: name.to_owned(),
                    looked_in: "in the catalog".into(),
                })
            }
        };
        if !entry.transport.is_remote() || transport == TransportKind::Stdio {
            return Err(CoreError::Refused {
                connector: name.to_owned(),
                why: format!(
                    "only a remote connector's HTTP transport can be written back; {name} is {}",
                    entry.transport.display_name()
                ),
            });
        }
        let file = self.write_back_file();
        write_type(&file, &entry, transport)?;

        let credential_moved = if entry.is_oauth_capable() {
            self.move_credential(&entry, transport)?
        } else {
            None
        };
        Ok(WrittenBack {
            connector: name.to_owned(),
            transport,
            file,
            credential_moved,
        })
    }

    fn move_credential(
        &self,
        entry: &ServerEntry,
        transport: TransportKind,
    ) -> Result<Option<(String, String)>, CoreError> {
        let resolve = |n: &str| self.patchbay.resolve_variable(n);
        let mut moved = entry.clone();
        moved.transport = match entry.transport.clone() {
            Transport::StreamableHttp { url, headers } | Transport::Sse { url, headers } => {
                match transport {
                    TransportKind::Sse => Transport::Sse { url, headers },
                    _ => Transport::StreamableHttp { url, headers },
                }
            }
            stdio => stdio,
        };
        let (Ok(Some(from)), Ok(Some(to))) = (
            entry.credential_key(&resolve),
            moved.credential_key(&resolve),
        ) else {
            return Ok(None);
        };
        if from == to {
            return Ok(None);
        }
        let vault = self.patchbay.vault();
        let Some(row) = vault
            .credential_rows()?
            .into_iter()
            .find(|r| r.credential_key == from)
        else {
            return Ok(None);
        };
        if vault.credential_tokens(&to)?.is_some() {
            return Ok(None);
        }
        let Some(tokens) = vault.credential_tokens(&from)? else {
            return Ok(None);
        };
        let mut row = row;
        row.credential_key = to.clone();
        vault.put_credential(&row, &tokens)?;
        Ok(Some((from.0, to.0)))
    }

    /// Resolve `entry` the way a runtime start would see it.
    fn target_for(&self, catalog: &Catalog, entry: &ServerEntry) -> Result<CheckTarget, Skip> {
        let mut missing: Vec<String> = Vec::new();
        let mut resolved: Vec<Secret> = Vec::new();
        let resolve = |name: &str| self.patchbay.resolve_variable(name);
        let mut expand_all = |text: &str| -> String {
            for p in patchbay_catalog::placeholders(text) {
                if let Some(v) = resolve(&p.name) {
                    resolved.push(Secret::new(v));
                }
            }
            match expand(text, &resolve) {
                Ok(v) => v,
                Err(names) => {
                    for n in names {
                        if !missing.contains(&n) {
                            missing.push(n);
                        }
                    }
                    String::new()
                }
            }
        };
        let (endpoint, auth) = match &entry.transport {
            Transport::Stdio { command, args, env } => {
                let command = expand_all(command);
                let args: Vec<Secret> = args.iter().map(|a| Secret::new(expand_all(a))).collect();
                let mut env: Vec<(String, Secret)> = env
                    .iter()
                    .map(|(k, v)| (k.clone(), Secret::new(expand_all(v))))
                    .collect();
                let sets_cache = env
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case(npm_cache::NPM_CACHE_ENV));
                if !sets_cache {
                    if let Some(dir) = self.npm_caches(catalog).remove(entry.name.as_str()) {
                        env.push((
                            npm_cache::NPM_CACHE_ENV.to_owned(),
                            Secret::new(dir.display().to_string()),
                        ));
                    }
                }
                (
                    Endpoint::Stdio(StdioLaunch {
                        command,
                        args,
                        env,
                        cwd: None,
                    }),
                    AuthKind::Process,
                )
            }
            Transport::StreamableHttp { url, headers } | Transport::Sse { url, headers } => {
                let url = expand_all(url);
                let headers: Vec<(String, Secret)> = headers
                    .iter()
                    .map(|(k, v)| (k.clone(), Secret::new(expand_all(v))))
                    .collect();
                let http = HttpEndpoint { url, headers };
                let endpoint = match entry.transport {
                    Transport::Sse { .. } => Endpoint::Sse(http),
                    _ => Endpoint::StreamableHttp(http),
                };
                (endpoint, AuthKind::Process)
            }
        };
        if !missing.is_empty() {
            return Err(Skip(
                format!(
                    "missing configuration ({} has no value)",
                    missing.join(", ")
                ),
                Some(Action::SetVariable),
            ));
        }
        let (endpoint, auth) = match endpoint {
            Endpoint::Stdio(_) => (endpoint, auth),
            Endpoint::StreamableHttp(mut http) | Endpoint::Sse(mut http)
                if entry.is_oauth_capable() =>
            {
                let token = self.stored_token(entry)?;
                let token_sent = token.is_some();
                if let Some(token) = token {
                    http.headers.push((
                        "Authorization".to_owned(),
                        Secret::new(format!("Bearer {}", token.expose())),
                    ));
                }
                let endpoint = match entry.transport {
                    Transport::Sse { .. } => Endpoint::Sse(http),
                    _ => Endpoint::StreamableHttp(http),
                };
                (endpoint, AuthKind::OAuth { token_sent })
            }
            remote => {
                let headers: Vec<String> = entry
                    .static_credential_headers()
                    .into_iter()
                    .map(str::to_owned)
                    .collect();
                let mut variables: Vec<String> = Vec::new();
                if let Some(values) = entry.transport.headers() {
                    for h in &headers {
                        for p in patchbay_catalog::placeholders(&values[h.as_str()]) {
                            if !variables.contains(&p.name) {
                                variables.push(p.name);
                            }
                        }
                    }
                }
                (remote, AuthKind::StaticHeaders { headers, variables })
            }
        };
        Ok(CheckTarget {
            connector: entry.name.0.clone(),
            endpoint,
            auth,
            extra_secrets: resolved,
            // The entry's own `timeout_ms` and `retry` (docs/catalog.md, "Connection settings").
            request_timeout: entry.timeout_ms.map(|ms| Duration::from_millis(ms.into())),
            retry: entry.retry.map(patchbay_check::RetryPolicy::from),
        })
    }

    /// The stored access token of an OAuth-capable entry, as the status finds it.
    fn stored_token(&self, entry: &ServerEntry) -> Result<Option<Secret>, Skip> {
        let resolve = |n: &str| self.patchbay.resolve_variable(n);
        let Ok(Some(key)) = entry.credential_key(&resolve) else {
            return Ok(None);
        };
        match self
            .patchbay
            .vault()
            .credential_tokens(&CredentialKey(key.0))
        {
            Ok(tokens) => Ok(tokens.map(|t| t.access_token)),
            Err(e) => Err(Skip(
                format!("the stored credential cannot be read ({e})"),
                None,
            )),
        }
    }

    /// The npm cache of every npx stdio server in the catalog (see `npm_cache`).
    fn npm_caches(&self, catalog: &Catalog) -> BTreeMap<String, PathBuf> {
        let resolve = |n: &str| self.patchbay.resolve_variable(n);
        let servers: Vec<(String, String, Vec<String>)> = catalog
            .servers()
            .filter_map(|e| match &e.transport {
                Transport::Stdio { command, args, .. } => Some((
                    e.name.0.clone(),
                    expand(command, &resolve).unwrap_or_else(|_| command.clone()),
                    args.iter()
                        .map(|a| expand(a, &resolve).unwrap_or_else(|_| a.clone()))
                        .collect(),
                )),
                _ => None,
            })
            .collect();
        npm_cache::plan(&npm_cache_root(&self.patchbay.paths), &servers)
    }
}

/// Where checked npx servers keep their npm caches.
pub fn npm_cache_root(paths: &Paths) -> PathBuf {
    paths.data_dir.join("cache").join("npm")
}

fn kind_of(transport: &Transport) -> TransportKind {
    match transport {
        Transport::Stdio { .. } => TransportKind::Stdio,
        Transport::StreamableHttp { .. } => TransportKind::StreamableHttp,
        Transport::Sse { .. } => TransportKind::Sse,
    }
}

/// One sentence on what to do, and the action that goes with it. Authorize is offered only for
/// an OAuth-capable server's 401; a rejected static credential names what to fix instead.
fn advice_for(
    entry: &ServerEntry,
    target: &CheckTarget,
    e: &CheckError,
) -> (String, Option<Action>) {
    let name = entry.name.as_str();
    match e {
        CheckError::NeedsAuthorization { .. } => (
            format!("Authorize it: `patchbay authorize {name}` or its Authorize button."),
            Some(Action::Authorize),
        ),
        CheckError::CredentialRejected { variables, headers, .. } => match variables.first() {
            Some(var) => (
                format!(
                    "Check the value of {var} (sent in the {} header): `patchbay secret set {var}`. Authorizing does not apply to a static credential.",
                    headers.join(", ")
                ),
                Some(Action::SetVariable),
            ),
            None => (
                format!(
                    "Check the {} header's value in {}. Authorizing does not apply to a static credential.",
                    headers.join(", "),
                    entry.source.display()
                ),
                Some(Action::EditCatalog),
            ),
        },
        CheckError::Rejected { .. } => (
            format!(
                "The server answered but neither streamable HTTP nor SSE worked at {}; check the URL in {}.",
                entry.transport.url().unwrap_or(""),
                entry.source.display()
            ),
            Some(Action::EditCatalog),
        ),
        CheckError::Unreachable { .. } | CheckError::TimedOut { .. } => (
            match &target.endpoint {
                Endpoint::Stdio(launch) => format!(
                    "The server did not answer; run `{}` in a terminal to see why.",
                    launch.command
                ),
                _ => format!(
                    "Nothing answered at {}; is the server up, and the URL right?",
                    entry.transport.url().unwrap_or("")
                ),
            },
            None,
        ),
        CheckError::SpawnFailed { command, .. } => (
            format!("`{command}` could not be started; is it installed and on the PATH Patchbay starts with?"),
            Some(Action::EditCatalog),
        ),
        CheckError::Exited { .. } => (
            "The server process exited during the handshake; its last words are in the error.".to_owned(),
            None,
        ),
        CheckError::MissingConfiguration { variables } => (
            format!(
                "Store {} with `patchbay secret set`.",
                variables.join(", ")
            ),
            Some(Action::SetVariable),
        ),
        CheckError::ServerError { .. } | CheckError::Protocol { .. } | CheckError::Invalid { .. } => (
            "The server answered, but not as an MCP server should; the error says how.".to_owned(),
            None,
        ),
    }
}

/// Set `type` of `entry` in the catalog file `file`, keeping every other key and its order, the
/// file's form (AIR's flat map or the `mcpServers` wrapper) and a leading BOM; a new file is
/// written flat. Copies the entry from its own source first when `file` lacks it. A file that
/// cannot be read as a catalog (not JSON, a duplicate key, both forms at once, a FIFO) is left
/// alone. Validated, then written by temp file + fsync + rename.
fn write_type(file: &Path, entry: &ServerEntry, transport: TransportKind) -> Result<(), CoreError> {
    crate::user_catalog::edit_entry(
        file,
        entry.name.as_str(),
        || crate::user_catalog::source_entry(entry),
        |member| {
            member.insert("type".into(), Value::String(transport.as_str().to_owned()));
        },
        |written| {
            if kind_of(&written.transport) == transport {
                Ok(())
            } else {
                Err("the entry did not come out as written".into())
            }
        },
    )
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;

    fn entry(source: &Path, transport: Transport) -> ServerEntry {
        ServerEntry {
            name: patchbay_catalog::ServerName("svc".into()),
            title: None,
            description: None,
            transport,
            oauth: None,
            unavailable: None,
            enabled: None,
            timeout_ms: None,
            retry: None,
            source: source.to_path_buf(),
        }
    }

    #[test]
    fn write_back_keeps_a_flat_file_flat_with_its_unknown_keys_and_bom() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        std::fs::write(
            &file,
            "\u{feff}{\"$schema\":\"./mcp.schema.json\",\"svc\":{\"title\":\"S\",\"type\":\"http\",\"url\":\"http://127.0.0.1:9/mcp\",\"x-note\":\"mine\"},\"other\":{\"type\":\"stdio\",\"command\":\"node\"}}",
        )
        .unwrap();
        let e = entry(
            &file,
            Transport::StreamableHttp {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: IndexMap::new(),
            },
        );
        write_type(&file, &e, TransportKind::Sse).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with('\u{feff}'), "the BOM is kept");
        let doc: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).unwrap();
        assert!(doc.get("mcpServers").is_none(), "still flat: {text}");
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["$schema", "svc", "other"]);
        assert_eq!(doc["$schema"], "./mcp.schema.json");
        assert_eq!(doc["svc"]["type"], "sse");
        assert_eq!(doc["svc"]["x-note"], "mine");
        assert_eq!(doc["other"]["command"], "node");
    }

    #[test]
    fn write_back_keeps_unknown_keys_and_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        std::fs::write(
            &file,
            r#"{"$schema":"x","custom":{"keep":1},"mcpServers":{"svc":{"title":"S","type":"http","url":"http://127.0.0.1:9/mcp","x-note":"mine"},"other":{"type":"stdio","command":"node"}}}"#,
        )
        .unwrap();
        let e = entry(
            &file,
            Transport::StreamableHttp {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: IndexMap::new(),
            },
        );
        write_type(&file, &e, TransportKind::Sse).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(doc["custom"]["keep"], 1);
        assert_eq!(doc["mcpServers"]["svc"]["type"], "sse");
        assert_eq!(doc["mcpServers"]["svc"]["x-note"], "mine");
        assert_eq!(doc["mcpServers"]["other"]["command"], "node");
        let keys: Vec<&String> = doc["mcpServers"]["svc"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["title", "type", "url", "x-note"]);
        // No temp file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn write_back_copies_an_entry_from_its_source_into_a_new_user_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let shipped = dir.path().join("shipped.json");
        std::fs::write(
            &shipped,
            r#"{"mcpServers":{"svc":{"type":"sse","url":"http://127.0.0.1:9/sse","title":"Svc"}}}"#,
        )
        .unwrap();
        let user = dir.path().join("config").join("mcp.json");
        let e = entry(
            &shipped,
            Transport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
                headers: IndexMap::new(),
            },
        );
        write_type(&user, &e, TransportKind::StreamableHttp).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&user).unwrap()).unwrap();
        // A new user catalog is written in the canonical flat form.
        assert_eq!(doc["svc"]["type"], "streamable-http");
        assert_eq!(doc["svc"]["title"], "Svc");
        assert_eq!(doc.as_object().unwrap().len(), 1);
        // The shipped file is untouched.
        assert!(std::fs::read_to_string(&shipped)
            .unwrap()
            .contains("\"sse\""));
    }

    #[test]
    fn write_back_refuses_a_file_that_is_not_json() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        std::fs::write(&file, "{ not json").unwrap();
        let e = entry(
            &file,
            Transport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
                headers: IndexMap::new(),
            },
        );
        let err = write_type(&file, &e, TransportKind::StreamableHttp).unwrap_err();
        assert_eq!(err.kind(), "catalog_write");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
    }

    #[test]
    fn write_back_copies_a_built_in_entry_from_the_flat_shipped_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("mcp.json");
        let mut e = entry(
            Path::new(patchbay_catalog::BUILT_IN_PATH),
            Transport::StreamableHttp {
                url: "https://mcp.notion.com/mcp".into(),
                headers: IndexMap::new(),
            },
        );
        e.name = patchbay_catalog::ServerName("notion".into());
        write_type(&user, &e, TransportKind::Sse).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&user).unwrap()).unwrap();
        assert_eq!(doc["notion"]["type"], "sse");
        assert_eq!(doc["notion"]["title"], "Notion");
        assert_eq!(doc["notion"]["url"], "https://mcp.notion.com/mcp");
    }

    #[test]
    fn write_back_refuses_duplicates_and_mixed_forms_and_leaves_the_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        let e = entry(
            &file,
            Transport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
                headers: IndexMap::new(),
            },
        );
        for (text, says) in [
            (
                r#"{"svc":{"type":"sse","url":"http://127.0.0.1:9/sse"},"svc":{"type":"stdio","command":"x"}}"#,
                "appears twice",
            ),
            (
                r#"{"mcpServers":{"svc":{"type":"sse","url":"http://127.0.0.1:9/sse"}},"b":{"type":"stdio","command":"x"}}"#,
                "has both the `mcpServers` wrapper",
            ),
        ] {
            std::fs::write(&file, text).unwrap();
            let err = write_type(&file, &e, TransportKind::StreamableHttp).unwrap_err();
            assert_eq!(err.kind(), "catalog_write");
            assert!(err.to_string().contains(says), "{err}");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
        }
    }

    #[cfg(unix)]
    #[test]
    fn write_back_refuses_a_fifo_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("mcp.json");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = entry(
            &fifo,
            Transport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
                headers: IndexMap::new(),
            },
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(write_type(&path, &e, TransportKind::StreamableHttp));
        });
        let err = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("write-back to a FIFO did not return within 10 s")
            .unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
    }
}

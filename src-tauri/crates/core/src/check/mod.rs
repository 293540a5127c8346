//! The connection check wired to Patchbay: a catalog entry resolved the way the status resolves
//! it (`${VAR}`s from the vault, then the environment; an OAuth-capable server's stored token
//! as its bearer), checked for real by `patchbay-check`, recorded on the health board
//! (`health.sqlite` in the data directory), and, when the other HTTP transport answered, written
//! back to the user catalog on request. The Test button, `patchbay check` and the periodic check
//! all come through [`Checker`].
//!
//! This file runs checks and reports them, with the advice shown for a result next to `report`,
//! its only reader (the board carries no advice). `resolve` turns a catalog entry into what is
//! checked, `board` reads the health board, `write_back` saves the transport that answered.

mod board;
mod resolve;
mod write_back;

pub use board::{BoardRow, HealthBoard};
pub use resolve::npm_cache_root;
pub use write_back::{WriteBackOffer, WrittenBack};

use crate::{CoreError, Patchbay};
use chrono::{DateTime, Utc};
use patchbay_catalog::{Catalog, CatalogItem, ServerEntry};
use patchbay_check::health::rfc3339;
use patchbay_check::{
    check_paced, Attempt, CheckError, CheckOutcome, CheckTarget, Degraded, DegradedRule, Endpoint,
    ErrorSummary, HealthStats, HealthStore, ServerIdentity, Timeouts, ToolInfo, Transition,
    TransportKind, HEALTH_FILE,
};
use patchbay_status::Action;
use resolve::kind_of;
use serde::Serialize;
use std::collections::HashMap;
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

    /// Notes the scope `name`'s server asked for on its credential, for the status ("needs more
    /// access") and the next Authorize. A vault that cannot note it costs only the note.
    fn want_scope(&self, name: &str, scope: &str) {
        let vault = self.patchbay.vault();
        let rows = vault.credential_rows().unwrap_or_default();
        for row in rows.iter().filter(|r| r.server_name == name) {
            if let Err(e) = vault.want_scope(&row.credential_key, scope, self.patchbay.now()) {
                tracing::warn!(connector = name, "cannot note the scope it wants: {e}");
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
            return Err(CoreError::unknown_connector(
                &catalog,
                name,
                "in the catalog",
            ));
        };
        self.check_item(&catalog, item, true).await
    }

    /// Check every connector in use, a few at a time; those that cannot be started (declared
    /// unavailable, missing configuration, invalid) are reported as skipped. In catalog order.
    /// The gallery (catalog entries not in use) is never checked.
    pub async fn check_all(&self) -> Result<Vec<ConnectorCheck>, CoreError> {
        let (catalog, in_use) = self.patchbay.catalog_in_use();
        let catalog = Arc::new(catalog);
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
        let (catalog, in_use) = self.patchbay.catalog_in_use();
        let catalog = Arc::new(catalog);
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
                if let CheckError::NeedsMoreAccess { scope, .. } = e {
                    self.want_scope(name, scope);
                }
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
        CheckError::NeedsMoreAccess { scope, .. } => (
            format!("It needs more access (\"{scope}\"): authorize it again, which asks for what was granted and this: `patchbay authorize {name}` or its Authorize button."),
            Some(Action::Reauthorize),
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

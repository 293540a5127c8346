//! The facade every surface calls: the tray, the Connectors window and the CLI. It gathers the
//! local signals once per call and hands them to the one status computation.

use crate::setup::{add_client_servers, ClientSetup, ClientView, ClientViewCache, OwnGateway};
use crate::{CoreError, Paths};
use chrono::{DateTime, Utc};
use patchbay_catalog::{load, Catalog, CredentialKey};
use patchbay_check::{HealthStore, HEALTH_FILE};
use patchbay_status::Usage;
use patchbay_status::{
    compute, DegradedStatus, LocalSignals, Offered, RefreshEntry, StatusReport, StoreHealth,
    VaultVariables,
};
use patchbay_vault::{KeyringStore, Secret, SecretStore, VariableInfo, Vault, VaultError};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

/// How many refresh attempts a status row carries (the vault keeps more; `patchbay history`).
const REFRESH_HISTORY_SHOWN: usize = 10;

/// Where "now" comes from; injected so expiry is testable.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

pub struct Patchbay {
    pub paths: Paths,
    vault: Arc<Vault>,
    clock: Clock,
    /// Where the clients' configs are read from (`None`: no client is read; tests).
    clients: Option<ClientSetup>,
    /// Literal secrets found in clients' configs, by the `${VAR}` their synthesized entries use;
    /// refreshed on every read of the catalog. In memory only.
    client_secrets: RwLock<HashMap<String, Secret>>,
    /// The clients' configs as last read, kept while their files are unchanged.
    client_views: ClientViewCache,
    /// Where Patchbay's own gateway is reached: never a connector.
    own_gateway: OwnGateway,
}

impl Patchbay {
    /// Open the data directory with the real OS keychain.
    pub fn open(paths: Paths) -> Result<Patchbay, CoreError> {
        let store = Arc::new(KeyringStore::new(crate::paths::KEYCHAIN_SERVICE));
        Patchbay::with_store(paths, store)
    }

    /// Open for reading (a status, what is offered): works where the data directory cannot be
    /// written (read-only, full disk) by opening the database read-only, and reads a missing one
    /// as a fresh install; see [`Vault::open_for_reading`]. Writes through it fail.
    pub fn open_for_reading(paths: Paths) -> Result<Patchbay, CoreError> {
        let store = Arc::new(KeyringStore::new(crate::paths::KEYCHAIN_SERVICE));
        let vault = Arc::new(Vault::open_for_reading(
            &paths.database(),
            store,
            &paths.keychain_account,
        )?);
        Ok(Patchbay {
            own_gateway: OwnGateway::recorded_in(own_gateway_ports(&paths)),
            paths,
            vault,
            clock: Arc::new(Utc::now),
            clients: None,
            client_secrets: RwLock::default(),
            client_views: ClientViewCache::default(),
        })
    }

    /// Open with another secret store (an in-memory one in tests).
    pub fn with_store(paths: Paths, store: Arc<dyn SecretStore>) -> Result<Patchbay, CoreError> {
        let vault = Arc::new(Vault::open(
            &paths.database(),
            store,
            &paths.keychain_account,
        )?);
        Ok(Patchbay {
            own_gateway: OwnGateway::recorded_in(own_gateway_ports(&paths)),
            paths,
            vault,
            clock: Arc::new(Utc::now),
            clients: None,
            client_secrets: RwLock::default(),
            client_views: ClientViewCache::default(),
        })
    }

    pub fn with_clock(mut self, clock: Clock) -> Patchbay {
        self.clock = clock;
        self
    }

    /// Read the clients' configs (Claude Code, Cursor, ...) from `setup`: the connectors they
    /// configure are in use, and their servers no catalog has become connectors of their own.
    pub fn with_clients(mut self, setup: ClientSetup) -> Patchbay {
        self.clients = Some(setup);
        self
    }

    /// Where the clients' configs are read from, when they are.
    pub fn client_setup(&self) -> Option<&ClientSetup> {
        self.clients.as_ref()
    }

    /// Patchbay's own gateway's ports (a gateway that binds another port adds it here).
    pub fn own_gateway(&self) -> &OwnGateway {
        &self.own_gateway
    }

    pub fn vault(&self) -> &Vault {
        &self.vault
    }

    /// The vault, shared (the runtime-store watcher holds it on its own thread).
    pub fn shared_vault(&self) -> Arc<Vault> {
        self.vault.clone()
    }

    /// "Now", from the injected clock.
    pub fn now(&self) -> DateTime<Utc> {
        (self.clock)()
    }

    /// A `${VAR}`'s value: the vault first, then the process environment. `None` when neither
    /// has it (or the vault's keychain did not answer and the environment has none).
    pub fn resolve_variable(&self, name: &str) -> Option<String> {
        match self.vault.variable(name) {
            Ok(Some(secret)) => Some(secret.expose().to_owned()),
            Ok(None) | Err(_) => std::env::var(name).ok().or_else(|| {
                self.client_secrets
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(name)
                    .map(|s| s.expose().to_owned())
            }),
        }
    }

    /// The catalog files, plus a connector for each server a client configures that no catalog
    /// has (see [`crate::setup`]).
    pub fn catalog(&self) -> Catalog {
        self.catalog_and_usage().0
    }

    /// The catalog and what puts its connectors in use, from one read of the clients.
    fn catalog_and_usage(&self) -> (Catalog, Usage) {
        let mut catalog = load(&self.paths.catalog_sources());
        let Some(setup) = &self.clients else {
            return (catalog, Usage::default());
        };
        let view = self.client_views.get(setup);
        for error in &view.errors {
            tracing::warn!("{error}");
        }
        let mut synthesized = add_client_servers(&mut catalog, &view, &self.own_gateway);
        *self
            .client_secrets
            .write()
            .unwrap_or_else(|p| p.into_inner()) = synthesized.secrets;
        // Said in the report too (status, --json, the window), not only in the log.
        synthesized.usage.client_errors = view.errors.clone();
        (catalog, synthesized.usage)
    }

    /// The status of every connector, from local signals only. Never fails as a whole.
    /// Degraded connectors (the health board's rule) are marked and counted here, so every
    /// surface (the CLI, the tray's badge and menu, the window, `offered`) counts the same ones.
    pub fn status(&self) -> StatusReport {
        self.status_with(&Usage::default())
    }

    /// The names of the connectors in use (the rows of [`Patchbay::status`]).
    pub fn in_use(&self) -> BTreeSet<String> {
        self.catalog_in_use().1
    }

    /// The catalog and the names of the connectors in use, from one read of the catalogs and the
    /// clients: what resolving one connector needs (the gateway every few seconds, every
    /// `patchbay connect`, a check). The states and [`StatusReport::apply_usage`] decide, as for
    /// [`Patchbay::status`], without the rest of a status (refresh histories, the health board,
    /// where credentials came from), which says nothing of what is in use.
    pub fn catalog_in_use(&self) -> (Catalog, BTreeSet<String>) {
        let (catalog, usage) = self.catalog_and_usage();
        let mut report = compute(&catalog, &self.signals());
        report.apply_usage(&catalog, &usage);
        let names = report.connectors.into_iter().map(|c| c.name).collect();
        (catalog, names)
    }

    /// [`Patchbay::status`] with more of what puts connectors in use: the runtime bridges add
    /// the servers Claude Code and Codex configure (also when no client setup is read).
    pub fn status_with(&self, extra: &Usage) -> StatusReport {
        let (catalog, mut usage) = self.catalog_and_usage();
        for (name, found) in &extra.found_in {
            let list = usage.found_in.entry(name.clone()).or_default();
            for f in found {
                if !list.contains(f) {
                    list.push(f.clone());
                }
            }
        }
        usage
            .credential_source
            .extend(extra.credential_source.clone());
        // Where each stored credential came from (authorized here, or adopted from a tool).
        if let Ok(sources) = self.vault.credential_sources() {
            for row in self.vault.credential_rows().unwrap_or_default() {
                if let Some(source) = sources.get(&row.credential_key) {
                    usage
                        .credential_source
                        .entry(row.server_name.clone())
                        .or_insert(*source);
                }
            }
        }
        let mut report = compute(&catalog, &self.signals());
        self.fill_refresh_history(&mut report);
        report.mark_degraded(&self.degraded());
        report.apply_usage(&catalog, &usage);
        report
    }

    /// The connectors the health board holds degraded (name → since when and why). Empty when
    /// no check ever ran (no board) or the board cannot be read: it is advisory, and a broken
    /// side file must not empty an agent's options. Opened only when it exists, so reading the
    /// status creates nothing.
    pub fn degraded(&self) -> BTreeMap<String, DegradedStatus> {
        let file = self.paths.data_dir.join(HEALTH_FILE);
        if !file.is_file() {
            return BTreeMap::new();
        }
        match HealthStore::open(&file).and_then(|h| h.degraded()) {
            Ok(rows) => rows
                .into_iter()
                .map(|(name, d)| {
                    (
                        name,
                        DegradedStatus {
                            since: d.since,
                            error: d.error,
                        },
                    )
                })
                .collect(),
            Err(e) => {
                tracing::warn!("cannot read the health board: {e}");
                BTreeMap::new()
            }
        }
    }

    /// Each connector's last refresh attempts (the error drawer), from the vault's history.
    fn fill_refresh_history(&self, report: &mut StatusReport) {
        for row in report.connectors.iter_mut() {
            let Some(credential) = &row.credential else {
                continue;
            };
            let key = CredentialKey(credential.key.clone());
            match self.vault.refresh_attempts(&key) {
                Ok(attempts) => {
                    row.refresh_history = attempts
                        .into_iter()
                        .take(REFRESH_HISTORY_SHOWN)
                        // The vault keeps the outcome as text; one this build does not
                        // know (a newer build wrote it) is left out, said in the log.
                        .filter_map(|a| {
                            let outcome = (a.outcome.parse())
                                .inspect_err(|e| tracing::warn!(connector = row.name, "{e}"))
                                .ok()?;
                            Some(RefreshEntry {
                                at: a.at,
                                outcome,
                                http_status: a.http_status,
                                summary: a.summary,
                                detail: a.detail,
                                retries: a.retries,
                            })
                        })
                        .collect()
                }
                Err(e) => {
                    tracing::warn!(connector = row.name, "cannot read the refresh history: {e}")
                }
            }
        }
    }

    /// Put a connector in use (the gallery's "Add", `patchbay enable`): writes `"enabled": true`
    /// for it into the user catalog (the `--catalog` file when one is used alone), copying the
    /// entry there first. A client-only connector is managed instead ([`Patchbay::manage`]).
    pub fn enable(&self, name: &str) -> Result<(), CoreError> {
        self.set_enabled(name, true)
    }

    /// Take a connector out of use (`patchbay disable`): writes `"enabled": false` for it, which
    /// hides it even where a client configures it.
    pub fn disable(&self, name: &str) -> Result<(), CoreError> {
        self.set_enabled(name, false)
    }

    /// The catalog file Patchbay writes: the `--catalog` file when one is used alone, else the
    /// user catalog.
    pub fn writable_catalog(&self) -> std::path::PathBuf {
        self.paths
            .catalog_override
            .clone()
            .unwrap_or_else(|| self.paths.user_catalog())
    }

    fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), CoreError> {
        let (catalog, usage) = self.catalog_and_usage();
        let entry = CoreError::server_entry(
            &catalog,
            name,
            "changing it",
            "in the catalog or any client",
        )?
        .clone();
        let client_only = usage.client_only.contains(name);
        if client_only && enabled {
            return self.manage(name);
        }
        let seed = || match client_only {
            true => self.client_entry(&catalog, name).map(|(entry, _)| entry),
            false => crate::user_catalog::source_entry(&entry),
        };
        crate::user_catalog::edit_entry(
            &self.writable_catalog(),
            name,
            seed,
            |member| {
                member.insert("enabled".into(), serde_json::Value::Bool(enabled));
            },
            |written| match written.enabled == Some(enabled) {
                true => Ok(()),
                false => Err("the entry did not come out as written".into()),
            },
        )?;
        Ok(())
    }

    /// "Manage with Patchbay": copies a server a client configures (and no catalog has) into
    /// the user catalog in AIR form. Literal secrets from the client's config go into the vault
    /// under the `${VAR}`s the entry uses; the entry holds only the placeholders.
    pub fn manage(&self, name: &str) -> Result<(), CoreError> {
        let (catalog, usage) = self.catalog_and_usage();
        if !usage.client_only.contains(name) {
            return Err(match catalog.get(name) {
                Some(_) => CoreError::Refused {
                    connector: name.to_owned(),
                    why: format!("\"{name}\" is already in a catalog; nothing to manage"),
                },
                None => CoreError::UnknownConnector {
                    name: name.to_owned(),
                    looked_in: "in any client".into(),
                },
            });
        }
        let (entry, secrets) = self.client_entry(&catalog, name)?;
        // Secrets first: a catalog entry whose ${VAR}s are not stored would read as missing.
        for (variable, value) in &secrets {
            if self.vault.variable(variable)?.is_none() {
                self.set_secret(variable, value)?;
            }
        }
        crate::user_catalog::edit_entry(
            &self.writable_catalog(),
            name,
            || Ok(entry),
            |_| {},
            |_| Ok(()),
        )?;
        Ok(())
    }

    fn client_entry(
        &self,
        catalog: &Catalog,
        name: &str,
    ) -> Result<(serde_json::Value, Vec<(String, Secret)>), CoreError> {
        let view = match &self.clients {
            Some(setup) => self.client_views.get(setup),
            None => Arc::new(ClientView::default()),
        };
        crate::setup::managed_entry(catalog, &view, name).ok_or_else(|| {
            CoreError::UnknownConnector {
                name: name.to_owned(),
                looked_in: "in any client any more".into(),
            }
        })
    }

    /// What an agent can start now, and the Unavailable roster (degraded connectors and those
    /// whose secret cannot be unsealed included).
    pub fn offered(&self) -> Offered {
        Offered::from_report(&self.status())
    }

    /// Read the local signals: metadata from SQLite, one keychain read at most (the vault caches
    /// its key), and the process environment.
    pub fn signals(&self) -> LocalSignals {
        let mut store = match self.vault.check_store() {
            Ok(()) => StoreHealth::Reachable,
            Err(e) => unreadable(e),
        };
        let credentials = match self.vault.credential_rows() {
            // A refresh token whose last answer was lost stays renewable (it is presented once
            // more; see `refresh`), so the status counts it as a refresh token.
            Ok(rows) => rows,
            Err(e) => {
                store = unreadable(e);
                Vec::new()
            }
        };
        let mut variables = VaultVariables::default();
        match self.vault.variable_names() {
            Ok(infos) => {
                variables.names = infos.into_iter().map(|i| i.name).collect::<BTreeSet<_>>()
            }
            Err(e) => store = unreadable(e),
        }
        if store == StoreHealth::Reachable && !variables.names.is_empty() {
            match self.vault.variables() {
                Ok(values) => {
                    variables.values = values
                        .into_iter()
                        .map(|(info, secret)| (info.name, secret))
                        .collect()
                }
                Err(e) => store = unreadable(e),
            }
        }
        let mut env: HashMap<String, String> = std::env::vars().collect();
        // A client's literal secret counts as set, after the vault and the environment.
        for (name, secret) in self
            .client_secrets
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            if !variables.names.contains(name) {
                env.entry(name.clone())
                    .or_insert_with(|| secret.expose().to_owned());
            }
        }
        // Scopes are not secrets: read with the rest of the metadata, an error is the store's.
        let wanted_scopes = self.vault.wanted_scopes().unwrap_or_else(|e| {
            store = unreadable(e);
            HashMap::new()
        });
        LocalSignals {
            credentials,
            store,
            variables,
            env,
            now: (self.clock)(),
            wanted_scopes,
        }
    }

    pub fn set_secret(&self, name: &str, value: &Secret) -> Result<(), CoreError> {
        self.vault.set_variable(name, value, (self.clock)())?;
        Ok(())
    }

    pub fn secret_names(&self) -> Result<Vec<VariableInfo>, CoreError> {
        Ok(self.vault.variable_names()?)
    }

    pub fn delete_secret(&self, name: &str) -> Result<bool, CoreError> {
        Ok(self.vault.delete_variable(name)?)
    }

    /// Discard every sealed secret, for a vault whose key was lost. Returns how many.
    pub fn reset_vault(&self) -> Result<usize, CoreError> {
        Ok(self.vault.discard_sealed_secrets()?)
    }

    /// Delete a credential that no catalog entry claims. Refuses a key the catalog still computes,
    /// so a slip of the finger cannot log a working connector out.
    pub fn delete_unclaimed(&self, key: &CredentialKey) -> Result<bool, CoreError> {
        let report = self.status();
        if !report
            .unclaimed
            .iter()
            .any(|u| u.credential_key == key.as_str())
        {
            let claimed_by = report.connectors.iter().find(|c| {
                c.credential
                    .as_ref()
                    .is_some_and(|cr| cr.key == key.as_str())
            });
            return Err(match claimed_by {
                Some(c) => CoreError::Refused {
                    connector: c.name.clone(),
                    why: format!(
                        "credential {key} belongs to the connector \"{}\"; it is not unclaimed",
                        c.name
                    ),
                },
                None => CoreError::NoUnclaimedCredential {
                    key: key.as_str().to_owned(),
                },
            });
        }
        Ok(self.vault.delete_credential(key)?)
    }
}

/// The keychain answered without a key that opens this vault (missing, another vault's,
/// malformed, refused) apart from a keychain or database that did not answer.
fn unreadable(e: VaultError) -> StoreHealth {
    let message = e.to_string();
    match e {
        VaultError::MasterKeyMissing { .. }
        | VaultError::WrongMasterKey { .. }
        | VaultError::MasterKeyMalformed { .. }
        | VaultError::StoreRejected(_) => StoreHealth::KeyUnusable { message },
        _ => StoreHealth::Unreachable { message },
    }
}

/// Where the ports this data directory's gateways served are recorded.
fn own_gateway_ports(paths: &Paths) -> std::path::PathBuf {
    paths.data_dir.join(crate::setup::OWN_GATEWAY_PORTS_FILE)
}

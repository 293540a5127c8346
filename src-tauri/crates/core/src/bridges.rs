//! Runtime bridges in the core: which runtimes are installed (Claude Code, Codex; their
//! `CLAUDE_CONFIG_DIR` / `CODEX_HOME` honoured), which catalog connectors each one has configured
//! (matched by URL; the runtime's own server name decides the key), writing our credentials
//! through to them, adopting what they rotated, and "Add to Claude Code / Codex".

use crate::{CoreError, Patchbay};
use patchbay_catalog::{CatalogItem, CredentialKey, ServerEntry, Transport};
use patchbay_runtimes::claude::{add_server, AddServerOutcome, ClaudeServerSpec};
use patchbay_runtimes::claude_keychain::claude_store;
use patchbay_runtimes::codex::codex_store;
use patchbay_runtimes::config::{
    match_catalog, read_claude_servers, read_codex_config, CodexStoreMode, RuntimePaths,
};
use patchbay_runtimes::reconcile::{
    grant_client_secret, runtime_credential, runtime_id, Adoption, BridgeKey, Reconciled,
    Reconciler, Retired, Target, WriteThrough,
};
pub use patchbay_runtimes::watch::StoreWatch;
use patchbay_runtimes::watch::{watch_and_heal, DesiredFn, KeysFn, Pass, Watched};
use patchbay_runtimes::{Runtime, RuntimeError, RuntimeStore, WriteOutcome};
use patchbay_status::{BridgeSummary, RuntimeSummary, StatusReport};
use patchbay_vault::Vault;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

/// A runtime as found on this machine.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RuntimeFound {
    pub runtime: Runtime,
    pub display_name: &'static str,
    /// Whether any of its files exist.
    pub found: bool,
    /// Its server config files (`.claude.json`; Codex's `config.toml`).
    pub config: Vec<PathBuf>,
    /// Where it keeps MCP credentials (Codex in keyring mode: the keyring service).
    pub credential_store: String,
    /// Remote servers configured in it.
    pub servers: usize,
    /// Its config could not be read (the bridges of this runtime are then unknown).
    pub error: Option<String>,
    pub bridges: Vec<Bridged>,
}

/// A catalog connector configured in a runtime.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Bridged {
    /// The catalog's name.
    pub connector: String,
    pub runtime: Runtime,
    /// The runtime's name for the server.
    pub server_name: String,
    /// The key the runtime files the credential under (`None`: a `${VAR}` did not resolve).
    pub credential_key: Option<CredentialKey>,
    /// The key the vault files our credential under (`None`: not computable now).
    pub vault_key: Option<CredentialKey>,
}

impl Bridged {
    fn key(&self) -> Option<BridgeKey> {
        Some(BridgeKey {
            vault: self.vault_key.clone()?,
            runtime: self.credential_key.clone()?,
        })
    }
}

/// What adding a connector to a runtime did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Added {
    Added,
    AlreadyPresent,
}

/// The bridges over a shared [`Patchbay`]. Cheap to build; re-reads the runtimes' configs on
/// every call (they change under us).
pub struct Bridges {
    patchbay: Arc<Patchbay>,
    paths: Option<RuntimePaths>,
    reconciler: Arc<Reconciler>,
}

/// Removes what killed Patchbay writers left beside the runtimes' and clients' files (temp
/// copies with credentials in them, a Claude Code lock of ours); run once at start. How many
/// went. See `patchbay_runtimes::left_behind`.
pub fn sweep_left_behind() -> usize {
    patchbay_runtimes::left_behind::sweep_from_env()
}

impl Bridges {
    /// Runtime paths from the process environment (`HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME`).
    pub fn new(patchbay: Arc<Patchbay>) -> Bridges {
        Bridges::with_paths(patchbay, RuntimePaths::from_env())
    }

    /// `None`: no home directory, so no runtime can be found.
    pub fn with_paths(patchbay: Arc<Patchbay>, paths: Option<RuntimePaths>) -> Bridges {
        Bridges {
            patchbay,
            paths,
            reconciler: Arc::new(Reconciler::new()),
        }
    }

    pub fn paths(&self) -> Option<&RuntimePaths> {
        self.paths.as_ref()
    }

    fn vault(&self) -> &Vault {
        self.patchbay.vault()
    }

    fn catalog_servers(&self) -> Vec<ServerEntry> {
        self.patchbay
            .catalog()
            .items
            .into_iter()
            .filter_map(|i| match i {
                CatalogItem::Server(e) => Some(e),
                CatalogItem::Invalid(_) => None,
            })
            .collect()
    }

    fn codex_mode(&self, paths: &RuntimePaths) -> CodexStoreMode {
        read_codex_config(paths)
            .map(|c| c.store_mode)
            .unwrap_or_default()
    }

    /// Every runtime, found or not, with the connectors bridged to it.
    pub fn runtimes(&self) -> Vec<RuntimeFound> {
        let Some(paths) = &self.paths else {
            return Vec::new();
        };
        let catalog = self.catalog_servers();
        let resolve = |v: &str| self.patchbay.resolve_variable(v);
        let vault_keys: BTreeMap<String, Option<CredentialKey>> = catalog
            .iter()
            .map(|e| {
                (
                    e.name.as_str().to_owned(),
                    e.credential_key(&resolve).ok().flatten(),
                )
            })
            .collect();
        let bridged = |servers: &[patchbay_runtimes::config::RuntimeServer]| -> Vec<Bridged> {
            match_catalog(servers, catalog.iter())
                .into_iter()
                .map(|b| Bridged {
                    vault_key: vault_keys.get(&b.catalog_name).cloned().flatten(),
                    connector: b.catalog_name,
                    runtime: b.runtime_server.runtime,
                    server_name: b.runtime_server.name,
                    credential_key: b.runtime_server.credential_key,
                })
                .collect()
        };

        let claude = read_claude_servers(paths, None, &resolve);
        let claude_found = paths.claude_json.exists()
            || paths.claude_config_dir.exists()
            || paths.claude_credentials.exists();
        let (claude_servers, claude_error) = match claude {
            Ok(s) => (s, None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        let codex = read_codex_config(paths);
        let (codex_config, codex_error) = match codex {
            Ok(c) => (c, None),
            Err(e) => (Default::default(), Some(e.to_string())),
        };
        vec![
            RuntimeFound {
                runtime: Runtime::ClaudeCode,
                display_name: Runtime::ClaudeCode.display_name(),
                found: claude_found,
                config: vec![paths.claude_json.clone()],
                credential_store: paths.claude_credentials.display().to_string(),
                servers: claude_servers.len(),
                error: claude_error,
                bridges: bridged(&claude_servers),
            },
            RuntimeFound {
                runtime: Runtime::Codex,
                display_name: Runtime::Codex.display_name(),
                found: paths.codex_home.exists(),
                config: vec![paths.codex_config()],
                credential_store: match codex_config.store_mode {
                    CodexStoreMode::Keyring => format!(
                        "keyring service \"{}\"",
                        patchbay_runtimes::codex::CODEX_KEYRING_SERVICE
                    ),
                    mode => format!(
                        "{}{}",
                        paths.codex_credentials().display(),
                        if mode == CodexStoreMode::Auto {
                            " (or the OS keyring when it answers)"
                        } else {
                            ""
                        }
                    ),
                },
                servers: codex_config.servers.len(),
                error: codex_error,
                bridges: bridged(&codex_config.servers),
            },
        ]
    }

    /// Every bridge of every runtime.
    pub fn bridged(&self) -> Vec<Bridged> {
        self.runtimes()
            .into_iter()
            .flat_map(|r| r.bridges)
            .collect()
    }

    /// The credential store of `runtime`. `known_keys`: the keys a keyring store reports.
    fn store(
        &self,
        runtime: Runtime,
        known_keys: Vec<CredentialKey>,
    ) -> Option<Box<dyn RuntimeStore>> {
        let paths = self.paths.as_ref()?;
        Some(match runtime {
            Runtime::ClaudeCode => claude_store(paths),
            Runtime::Codex => codex_store(paths, self.codex_mode(paths), known_keys),
        })
    }

    /// What the runtime holds under the bridge's key (`None`: nothing, or unreadable).
    pub fn runtime_entry(&self, bridge: &Bridged) -> Option<patchbay_runtimes::RuntimeCredential> {
        let key = bridge.credential_key.clone()?;
        let store = self.store(bridge.runtime, vec![key.clone()])?;
        store.read(&key).ok().flatten()
    }

    fn stores_for(&self, bridges: &[Bridged]) -> HashMap<Runtime, Box<dyn RuntimeStore>> {
        let mut out = HashMap::new();
        for runtime in [Runtime::ClaudeCode, Runtime::Codex] {
            let keys: Vec<CredentialKey> = bridges
                .iter()
                .filter(|b| b.runtime == runtime)
                .filter_map(|b| b.credential_key.clone())
                .collect();
            if keys.is_empty() {
                continue;
            }
            if let Some(store) = self.store(runtime, keys) {
                out.insert(runtime, store);
            }
        }
        out
    }

    /// Write the connector's stored credential through to every runtime it is bridged to
    /// (reconciling first). `Ok(None)` when it is bridged nowhere or has no key.
    pub fn write_through(&self, connector: &str) -> Result<Option<WriteThrough>, CoreError> {
        self.write_through_in(&self.bridged(), connector)
    }

    /// [`Bridges::write_through`] over bridges already read (one read per refresh pass rather
    /// than one per credential: reading them parses every catalog and runtime config).
    pub fn write_through_in(
        &self,
        bridged: &[Bridged],
        connector: &str,
    ) -> Result<Option<WriteThrough>, CoreError> {
        let bridges: Vec<Bridged> = bridged
            .iter()
            .filter(|b| b.connector == connector && b.key().is_some())
            .cloned()
            .collect();
        let Some(vault_key) = bridges.first().and_then(|b| b.vault_key.clone()) else {
            return Ok(None);
        };
        let stores = self.stores_for(&bridges);
        let runtime_keys: Vec<(Runtime, CredentialKey)> = bridges
            .iter()
            .filter_map(|b| Some((b.runtime, b.credential_key.clone()?)))
            .collect();
        let targets: Vec<Target<'_>> = runtime_keys
            .iter()
            .filter_map(|(runtime, key)| {
                Some(Target {
                    store: stores.get(runtime)?.as_ref(),
                    runtime_key: key,
                })
            })
            .collect();
        let done = self.reconciler.write_through(
            self.vault(),
            &vault_key,
            &targets,
            self.patchbay.now(),
        )?;
        Ok(Some(done))
    }

    /// Write every stored credential through to every runtime it is bridged to.
    pub fn sync(&self) -> Result<Vec<(String, WriteThrough)>, CoreError> {
        let stored: std::collections::BTreeSet<CredentialKey> = self
            .vault()
            .credential_rows()?
            .into_iter()
            .map(|r| r.credential_key)
            .collect();
        let mut connectors: Vec<String> = self
            .bridged()
            .into_iter()
            .filter(|b| b.vault_key.as_ref().is_some_and(|k| stored.contains(k)))
            .map(|b| b.connector)
            .collect();
        connectors.sort();
        connectors.dedup();
        let mut out = Vec::new();
        for connector in connectors {
            if let Some(done) = self.write_through(&connector)? {
                out.push((connector, done));
            }
        }
        Ok(out)
    }

    /// Reconcile every bridged credential now: adopt whatever a runtime rotated.
    pub fn adopt_all(&self) -> Vec<Adoption> {
        self.reconcile_each(&self.bridged())
    }

    /// Adopt whatever a runtime rotated for one connector: the refresher's first step, so it
    /// never presents a refresh token a runtime already rotated away.
    pub fn reconcile_connector(&self, connector: &str) -> Vec<Adoption> {
        self.reconcile_connector_in(&self.bridged(), connector)
    }

    /// [`Bridges::reconcile_connector`] over bridges already read.
    pub fn reconcile_connector_in(&self, bridged: &[Bridged], connector: &str) -> Vec<Adoption> {
        let bridges: Vec<Bridged> = bridged
            .iter()
            .filter(|b| b.connector == connector)
            .cloned()
            .collect();
        self.reconcile_each(&bridges)
    }

    /// Reconcile each bridge against its runtime's store; the adoptions made.
    fn reconcile_each(&self, bridges: &[Bridged]) -> Vec<Adoption> {
        let stores = self.stores_for(bridges);
        let now = self.patchbay.now();
        let mut adopted = Vec::new();
        for bridge in bridges {
            let (Some(key), Some(store)) = (bridge.key(), stores.get(&bridge.runtime)) else {
                continue;
            };
            match self
                .reconciler
                .reconcile(self.vault(), store.as_ref(), &key, now)
            {
                Ok(Reconciled::Adopted(a)) => adopted.push(a),
                Ok(_) => {}
                Err(e) => tracing::warn!(connector = bridge.connector, "cannot reconcile: {e}"),
            }
        }
        adopted
    }

    /// Retire the connector's credential everywhere: the vault drops its refresh token and
    /// force-expires the access token, and every runtime store it is bridged to loses its entry
    /// (so the runtime's copy, with its later expiry, is never adopted back).
    pub fn retire(&self, connector: &str, vault_key: &CredentialKey) -> Result<Retired, CoreError> {
        let (runtime_keys, stores) = self.runtime_targets(connector);
        let targets = targets(&runtime_keys, &stores);
        self.reconciler
            .retire(self.vault(), vault_key, &targets, self.patchbay.now())
            .map_err(CoreError::from)
    }

    /// Remove the connector's entry from every runtime store it is bridged to (Disconnect).
    pub fn remove_everywhere(
        &self,
        connector: &str,
    ) -> Vec<(Runtime, CredentialKey, Result<bool, RuntimeError>)> {
        let (runtime_keys, stores) = self.runtime_targets(connector);
        targets(&runtime_keys, &stores)
            .iter()
            .map(|t| {
                (
                    t.store.runtime(),
                    t.runtime_key.clone(),
                    t.store.remove(t.runtime_key),
                )
            })
            .collect()
    }

    /// The runtime keys a connector is filed under, with the stores that hold them.
    #[allow(clippy::type_complexity)]
    fn runtime_targets(
        &self,
        connector: &str,
    ) -> (
        Vec<(Runtime, CredentialKey)>,
        HashMap<Runtime, Box<dyn RuntimeStore>>,
    ) {
        let bridges: Vec<Bridged> = self
            .bridged()
            .into_iter()
            .filter(|b| b.connector == connector)
            .collect();
        let stores = self.stores_for(&bridges);
        let keys = bridges
            .iter()
            .filter_map(|b| Some((b.runtime, b.credential_key.clone()?)))
            .collect();
        (keys, stores)
    }

    /// Fill each connector's `bridges`, and the report's `runtimes` (which were found), in a
    /// status report.
    pub fn annotate(&self, report: &mut StatusReport) {
        self.annotate_with(report, self.runtimes());
    }

    fn annotate_with(&self, report: &mut StatusReport, runtimes: Vec<RuntimeFound>) {
        report.runtimes = runtimes
            .iter()
            .map(|r| RuntimeSummary {
                runtime: runtime_id(r.runtime).to_owned(),
                found: r.found,
                config_path: r
                    .config
                    .first()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            })
            .collect();
        let found: Vec<Runtime> = runtimes
            .iter()
            .filter(|r| r.found)
            .map(|r| r.runtime)
            .collect();
        let bridges: Vec<Bridged> = runtimes.into_iter().flat_map(|r| r.bridges).collect();
        for entry in self.catalog_servers() {
            let Some(row) = report
                .connectors
                .iter_mut()
                .find(|c| c.name == entry.name.0)
            else {
                continue;
            };
            if !entry.is_oauth_capable() {
                continue;
            }
            row.can_add_to = found
                .iter()
                .filter(|r| {
                    !bridges
                        .iter()
                        .any(|b| b.runtime == **r && b.connector == entry.name.0)
                })
                .filter(|r| add_refusal(&entry, **r).is_none())
                .map(|r| runtime_id(*r).to_owned())
                .collect();
        }
        let stores = self.stores_for(&bridges);
        for bridge in bridges {
            let Some(row) = report
                .connectors
                .iter_mut()
                .find(|c| c.name == bridge.connector)
            else {
                continue;
            };
            let in_store = match (&bridge.credential_key, stores.get(&bridge.runtime)) {
                (Some(key), Some(store)) => matches!(store.read(key), Ok(Some(_))),
                _ => false,
            };
            row.bridges.push(BridgeSummary {
                runtime: runtime_id(bridge.runtime).to_owned(),
                server_name: bridge.server_name,
                credential_key: bridge.credential_key.map(|k| k.0).unwrap_or_default(),
                in_store,
            });
        }
    }

    /// The status report with adoptions made first and the bridges filled in: what every surface
    /// shows (the CLI's `status`, the tray, the window). Cheap when nothing changed, and an
    /// adoption writes the vault only for a strictly newer pair, so a second call writes nothing
    /// (the vault watcher that a first adoption wakes does not loop).
    pub fn status(&self) -> StatusReport {
        // One read of the runtimes' configs serves both steps: adopting writes the vault only.
        let runtimes = self.runtimes();
        let bridged: Vec<Bridged> = runtimes.iter().flat_map(|r| r.bridges.clone()).collect();
        self.reconcile_each(&bridged);
        let mut usage = patchbay_status::Usage::default();
        for runtime in &runtimes {
            let file = runtime.config.first().cloned().unwrap_or_default();
            for bridge in &runtime.bridges {
                usage
                    .found_in
                    .entry(bridge.connector.clone())
                    .or_default()
                    .push(patchbay_status::FoundIn {
                        client: runtime_id(bridge.runtime).to_owned(),
                        display_name: bridge.runtime.display_name().to_owned(),
                        file: file.clone(),
                        server_name: bridge.server_name.clone(),
                    });
            }
        }
        let mut report = self.patchbay.status_with(&usage);
        self.annotate_with(&mut report, runtimes);
        report
    }

    /// Watch every runtime's credential store: adopt what a runtime rotated, and re-write an
    /// entry of ours that a runtime's unlocked read-modify-write dropped or reverted (healing).
    /// `on_adopted` runs on the watcher's thread (the app pushes `status-changed` from it).
    /// Bridges are re-read on every pass, so a runtime configured later is picked up.
    pub fn watch(
        self: &Arc<Self>,
        on_adopted: impl Fn(Vec<Adoption>) + Send + 'static,
    ) -> Result<StoreWatch, CoreError> {
        let Some(paths) = self.paths.clone() else {
            return Err(CoreError::NoRuntimeHome {
                purpose: "no runtime to watch",
            });
        };
        let mut watched = Vec::new();
        for runtime in [Runtime::ClaudeCode, Runtime::Codex] {
            let this = self.clone();
            let keys: KeysFn = Arc::new(move |_vault: &Vault, _store: &dyn RuntimeStore| {
                this.bridged()
                    .into_iter()
                    .filter(|b| b.runtime == runtime)
                    .filter_map(|b| b.key())
                    .collect()
            });
            let store: Arc<dyn RuntimeStore> = match runtime {
                Runtime::ClaudeCode => Arc::from(claude_store(&paths)),
                // A keyring cannot be listed: its items are read by the keys the config names
                // (those configured later are read once the watch is started again).
                Runtime::Codex => {
                    let known: Vec<CredentialKey> = self
                        .bridged()
                        .into_iter()
                        .filter(|b| b.runtime == Runtime::Codex)
                        .filter_map(|b| b.credential_key)
                        .collect();
                    Arc::from(codex_store(&paths, self.codex_mode(&paths), known))
                }
            };
            watched.push((Watched { store, keys }, self.desired(runtime)));
        }
        let patchbay = self.patchbay.clone();
        watch_and_heal(
            self.patchbay.shared_vault(),
            self.reconciler.clone(),
            watched,
            Arc::new(move || patchbay.now()),
            move |pass: Pass| {
                for (runtime, report) in &pass.healed {
                    tracing::info!(
                        runtime = runtime.display_name(),
                        rewritten = report.rewritten(),
                        "re-wrote entries a runtime dropped"
                    );
                }
                if !pass.adopted.is_empty() {
                    on_adopted(pass.adopted);
                }
            },
        )
        .map_err(|e| CoreError::Watch {
            path: e.path,
            message: e.message,
        })
    }

    /// What a runtime's store should hold for us: every live vault credential bridged to that
    /// runtime, under the runtime's own key (its server name decides it, not ours). A retired
    /// credential (no refresh token, access token lapsed) is left out, so it is never re-added.
    fn desired(self: &Arc<Self>, runtime: Runtime) -> DesiredFn {
        let this = self.clone();
        Arc::new(move |vault: &Vault, _store: &dyn RuntimeStore, now| {
            let rows = match vault.credential_rows() {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::warn!("cannot list the vault's credentials: {e}");
                    return Vec::new();
                }
            };
            this.bridged()
                .into_iter()
                .filter(|b| b.runtime == runtime)
                .filter_map(|b| b.key())
                .filter_map(|key| {
                    let row = rows.iter().find(|r| r.credential_key == key.vault)?;
                    if !row.is_live(now) {
                        return None;
                    }
                    let tokens = vault.credential_tokens(&key.vault).ok().flatten()?;
                    let mut credential = runtime_credential(row, &tokens, &key.runtime);
                    credential.client_secret = grant_client_secret(vault, row);
                    Some(credential)
                })
                .collect()
        })
    }

    /// The window's "Add to Claude Code" / "Add to Codex": add the connector to the runtime named
    /// by its id (`claude_code`, `codex`), write its stored credential through (best effort: a
    /// failure leaves the bridge "not yet written"), and answer the new status.
    pub fn add_to_runtime(&self, name: &str, runtime: &str) -> Result<StatusReport, CoreError> {
        let runtime = parse_runtime(runtime)?;
        self.add(name, runtime)?;
        if let Err(e) = self.write_through(name) {
            tracing::warn!(connector = name, "cannot write the credential through: {e}");
        }
        Ok(self.status())
    }

    /// "Add to Claude Code" / "Add to Codex": configure the catalog connector `name` in the
    /// runtime the way its own `mcp add` would, under the catalog's name.
    pub fn add(&self, name: &str, runtime: Runtime) -> Result<Added, CoreError> {
        let paths = self
            .paths
            .as_ref()
            .ok_or_else(|| CoreError::NoRuntimeHome {
                purpose: "cannot find the runtimes",
            })?;
        let entry = self
            .catalog_servers()
            .into_iter()
            .find(|e| e.name.as_str() == name)
            .ok_or_else(|| {
                CoreError::unknown_connector(
                    &self.patchbay.catalog(),
                    name,
                    "among the catalog's valid entries",
                )
            })?;
        if let Some(why) = add_refusal(&entry, runtime) {
            return Err(CoreError::Refused {
                connector: name.to_owned(),
                why,
            });
        }
        let (kind, url, headers) = match &entry.transport {
            Transport::Stdio { .. } => unreachable!("refused above"),
            Transport::StreamableHttp { url, headers } => ("http", url, headers),
            Transport::Sse { url, headers } => ("sse", url, headers),
        };
        match runtime {
            Runtime::ClaudeCode => {
                let spec = ClaudeServerSpec {
                    name: name.to_owned(),
                    kind: kind.to_owned(),
                    url: url.clone(),
                    headers: headers.clone(),
                };
                match add_server(paths, &spec).map_err(runtime_error)? {
                    AddServerOutcome::Added => Ok(Added::Added),
                    AddServerOutcome::AlreadyPresent => Ok(Added::AlreadyPresent),
                    AddServerOutcome::Conflict { existing } => Err(CoreError::RuntimeConflict {
                        runtime: Runtime::ClaudeCode.display_name(),
                        name: name.to_owned(),
                        existing: Some(existing.to_string()),
                    }),
                }
            }
            Runtime::Codex => add_codex_server(&paths.codex_config(), name, url),
        }
    }
}

/// Why `runtime` cannot take `entry` from "Add to …", or `None` when it can. One rule for the
/// command and for the window's buttons (`can_add_to` in the report).
fn add_refusal(entry: &ServerEntry, runtime: Runtime) -> Option<String> {
    let name = &entry.name;
    let (sse, headers) = match &entry.transport {
        Transport::Stdio { .. } => {
            return Some(format!(
                "{name} is a local (stdio) server; only remote servers are bridged"
            ))
        }
        Transport::StreamableHttp { headers, .. } => (false, headers),
        Transport::Sse { headers, .. } => (true, headers),
    };
    match runtime {
        Runtime::ClaudeCode => None,
        Runtime::Codex if sse => Some(format!("{name} uses SSE, which Codex does not support")),
        Runtime::Codex if !headers.is_empty() => Some(format!(
            "{name} sends headers; add it to Codex by hand (`codex mcp add`)"
        )),
        Runtime::Codex => None,
    }
}

/// A runtime from its id in the status JSON (`claude_code`, `codex`).
pub fn parse_runtime(id: &str) -> Result<Runtime, CoreError> {
    [Runtime::ClaudeCode, Runtime::Codex]
        .into_iter()
        .find(|r| runtime_id(*r) == id)
        .ok_or_else(|| {
            CoreError::InvalidInput(format!(
                "unknown runtime \"{id}\" (expected claude_code or codex)"
            ))
        })
}

fn targets<'a>(
    runtime_keys: &'a [(Runtime, CredentialKey)],
    stores: &'a HashMap<Runtime, Box<dyn RuntimeStore>>,
) -> Vec<Target<'a>> {
    runtime_keys
        .iter()
        .filter_map(|(runtime, key)| {
            Some(Target {
                store: stores.get(runtime)?.as_ref(),
                runtime_key: key,
            })
        })
        .collect()
}

fn runtime_error(e: RuntimeError) -> CoreError {
    CoreError::Runtime(e)
}

/// Writes `[mcp_servers.<name>] url = "<url>"` into Codex's `config.toml`, preserving the rest
/// (comments, order and every key we do not know), the way the credential stores are written:
/// under our lock (`config.toml.patchbay.lock`), re-read right before the replace, a temp file in
/// the same directory (fsynced, the file's own mode), a rename, and a directory fsync. A failure
/// at any step leaves the file as it was.
pub fn add_codex_server(
    config: &std::path::Path,
    name: &str,
    url: &str,
) -> Result<Added, CoreError> {
    use patchbay_runtimes::atomic::{lock_path_for, update_text_file, FileMode, UpdateOptions};
    let options = UpdateOptions {
        lock_path: lock_path_for(config),
        lock_timeout: patchbay_runtimes::lock::DEFAULT_LOCK_TIMEOUT,
        // Codex takes no lock of its own around its config writes that we know of.
        runtime_lock: None,
        create_if_missing: true,
        mode: FileMode::PreserveOrPrivate,
    };
    let mut outcome = Ok(Added::Added);
    update_text_file(config, &options, &mut |text| {
        let (result, new_text) = with_codex_server(config, text.unwrap_or(""), name, url);
        outcome = result;
        Ok(new_text)
    })
    .map_err(runtime_error)?;
    outcome
}

/// `text` with the server added: what adding it means, and the new text when it changes.
fn with_codex_server(
    config: &std::path::Path,
    text: &str,
    name: &str,
    url: &str,
) -> (Result<Added, CoreError>, Option<String>) {
    let mut doc = match patchbay_runtimes::toml_text::parse_document(text) {
        Ok(doc) => doc,
        Err(message) => {
            return (
                Err(CoreError::BadFile {
                    path: config.to_path_buf(),
                    message,
                }),
                None,
            )
        }
    };
    let Some(servers) = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_like_mut()
    else {
        return (
            Err(CoreError::BadFile {
                path: config.to_path_buf(),
                message: "mcp_servers is not a table".into(),
            }),
            None,
        );
    };
    if let Some(existing) = servers.get(name) {
        let same = existing
            .as_table_like()
            .and_then(|t| t.get("url"))
            .and_then(|u| u.as_str())
            == Some(url);
        return if same {
            (Ok(Added::AlreadyPresent), None)
        } else {
            (
                Err(CoreError::RuntimeConflict {
                    runtime: Runtime::Codex.display_name(),
                    name: name.to_owned(),
                    existing: None,
                }),
                None,
            )
        };
    }
    let mut table = toml_edit::Table::new();
    table.insert("url", toml_edit::value(url));
    servers.insert(name, toml_edit::Item::Table(table));
    (Ok(Added::Added), Some(doc.to_string()))
}

/// True when the outcome wrote anything (for printing).
pub fn written(outcome: &Result<WriteOutcome, RuntimeError>) -> bool {
    matches!(outcome, Ok(WriteOutcome::Written))
}

#[cfg(test)]
mod tests;

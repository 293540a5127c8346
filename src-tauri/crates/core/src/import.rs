//! Tokens already on the machine (issue 11, seed 004's passive migration): for connectors Patchbay
//! holds no credential for, find a usable token the user already holds in Claude Code's
//! `mcpOAuth` entries, Codex's store (file or keyring, per its mode) or mcp-remote's plaintext
//! `~/.mcp-auth/mcp-remote-v1/`, and adopt it with no consent screen **together with the client
//! it was issued to**, so the refresher renews it as that client.
//!
//! Rules:
//! - Usable: an unexpired access token, or a refresh token with a known client. Among several,
//!   the freshest (an unexpired access token first, then the latest expiry, then renewable).
//! - A credential Patchbay holds is never overwritten ([`patchbay_vault::Vault::put_imported_credential`]), and
//!   nothing is ever written into the other tool's files (they are only read).
//! - The grant: the token endpoint from the authorization server's metadata (RFC 8414, from the
//!   stored issuer, else discovered from the server, every request bounded); the other tool's
//!   registration is never ours to forget (`client_registered = false`). When discovery fails the
//!   credential is kept with no grant, and says "refresh needs authorizing in Patchbay".
//! - Where it came from is recorded in the vault (`credential_source`), so a row can say
//!   "Credential from mcp-remote".
//! - mcp-remote's plaintext files are offered for deletion, never deleted silently:
//!   [`Adopted::plaintext_files`], and [`delete_plaintext`] when the user asks. Until then
//!   mcp-remote holds the same pair: whichever of the two refreshes first spends it for the other.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_oauth::{discovery, ClientAuthMethod, Http};
use patchbay_runtimes::clients::ClientServer;
use patchbay_runtimes::config::{read_codex_config, Resolver, RuntimePaths};
use patchbay_runtimes::mcp_remote::{mcp_remote_dir, read_mcp_remote, McpRemoteOptions};
use patchbay_runtimes::RuntimeStore;
use patchbay_vault::{CredentialRow, CredentialSource, Grant, Imported, Secret, TokenSet};
use serde::Serialize;

use crate::{CoreError, Patchbay};

/// A connector to find a token for: a catalog entry or a connector found in a client config.
#[derive(Debug, Clone)]
pub struct ImportTarget {
    /// Our name for it (the vault row's server name).
    pub connector: String,
    /// Its MCP endpoint, `${VAR}`s expanded. Matched against the stores' URLs exactly after
    /// trimming, one trailing `/` forgiven.
    pub server_url: String,
    /// The key Patchbay files its credential under.
    pub credential_key: CredentialKey,
    /// The mcp-remote invocations configured in clients that bridge this server
    /// ([`ClientServer::mcp_remote_options`]): their options name mcp-remote's files. A plain
    /// `mcp-remote URL` (with and without a trailing `/`) is always tried as well.
    pub mcp_remote: Vec<McpRemoteOptions>,
    /// The catalog's `authServerMetadataUrl`, used when discovery starts from the server.
    pub auth_server_metadata_url: Option<String>,
}

impl ImportTarget {
    pub fn new(
        connector: impl Into<String>,
        server_url: impl Into<String>,
        credential_key: CredentialKey,
    ) -> ImportTarget {
        ImportTarget {
            connector: connector.into(),
            server_url: server_url.into(),
            credential_key,
            mcp_remote: Vec::new(),
            auth_server_metadata_url: None,
        }
    }

    /// Adds the mcp-remote invocations among `clients` that bridge this target's URL.
    pub fn with_mcp_remote_from(mut self, clients: &[ClientServer]) -> ImportTarget {
        for options in clients.iter().filter_map(ClientServer::mcp_remote_options) {
            if patchbay_catalog::same_url(&options.server_url, &self.server_url)
                && !self.mcp_remote.contains(&options)
            {
                self.mcp_remote.push(options);
            }
        }
        self
    }

    /// Every mcp-remote invocation whose files may hold this server's token.
    fn mcp_remote_candidates(&self) -> Vec<McpRemoteOptions> {
        let url = self.server_url.trim();
        let bare = url.strip_suffix('/').unwrap_or(url);
        let mut out = self.mcp_remote.clone();
        for plain in [url.to_string(), bare.to_string(), format!("{bare}/")] {
            let plain = McpRemoteOptions::new(plain);
            if !out.contains(&plain) {
                out.push(plain);
            }
        }
        out
    }
}

/// Where the other tools keep their tokens.
#[derive(Debug, Clone, Default)]
pub struct ImportSources {
    /// Claude Code's and Codex's files (`None`: no home directory, neither is read).
    pub runtime_paths: Option<RuntimePaths>,
    /// mcp-remote's store directory (`None`: not read).
    pub mcp_remote_dir: Option<PathBuf>,
}

impl ImportSources {
    /// From the process environment (the home as [`patchbay_runtimes::config::home_dir`] finds
    /// it, `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `MCP_REMOTE_CONFIG_DIR`).
    pub fn from_env() -> ImportSources {
        match patchbay_runtimes::config::home_dir() {
            Some(home) => ImportSources::resolve(&home, &|name| std::env::var(name).ok()),
            None => ImportSources::default(),
        }
    }

    /// From an injectable home directory and environment.
    pub fn resolve(home: &Path, env: Resolver<'_>) -> ImportSources {
        ImportSources {
            runtime_paths: Some(RuntimePaths::resolve(home, env)),
            mcp_remote_dir: Some(mcp_remote_dir(home, env)),
        }
    }
}

/// Bounds on what the import sends (discovery of each adopted credential's token endpoint).
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Each request's bound.
    pub request_timeout: Duration,
    /// The bound on one connector's whole discovery (several requests).
    pub discovery_timeout: Duration,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            request_timeout: Duration::from_secs(5),
            discovery_timeout: Duration::from_secs(15),
        }
    }
}

/// What [`import`] did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportReport {
    pub adopted: Vec<Adopted>,
    /// Targets not adopted, and why (already held, nothing usable found).
    pub not_adopted: Vec<NotAdopted>,
    /// Stores or files that could not be read (they hide nothing else).
    pub errors: Vec<String>,
    pub elapsed_ms: u64,
}

/// One credential adopted.
#[derive(Debug, Clone, Serialize)]
pub struct Adopted {
    pub connector: String,
    pub credential_key: CredentialKey,
    /// `claude_code`, `codex` or `mcp_remote`.
    pub source: CredentialSource,
    /// The client the tokens were issued to (the refresh presents it).
    pub client_id: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    pub has_refresh_token: bool,
    /// A grant was recorded: the refresher can renew it.
    pub renewable: bool,
    /// Why it cannot renew by itself, e.g. "refresh needs authorizing in Patchbay (...)".
    pub note: Option<String>,
    /// mcp-remote's plaintext files for this server, offered for deletion ([`delete_plaintext`]).
    pub plaintext_files: Vec<PathBuf>,
}

/// A target left alone.
#[derive(Debug, Clone, Serialize)]
pub struct NotAdopted {
    pub connector: String,
    pub reason: String,
}

/// A token found in another tool's store, before adoption.
#[derive(Debug, Clone)]
struct Found {
    source: CredentialSource,
    access_token: Secret,
    refresh_token: Option<Secret>,
    expires_at: Option<DateTime<Utc>>,
    scope: Option<String>,
    issuer: Option<String>,
    client_id: Option<String>,
    client_secret: Option<Secret>,
    /// The registration's method (mcp-remote's `token_endpoint_auth_method`), as named.
    auth_method: Option<ClientAuthMethod>,
    redirect_uri: Option<String>,
    /// mcp-remote's `--resource`, when its invocation named one.
    resource: Option<String>,
    plaintext_files: Vec<PathBuf>,
}

impl Found {
    fn access_valid(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_none_or(|at| at > now)
    }

    /// A refresh can go out: a refresh token, and the client it belongs to.
    fn renewable(&self) -> bool {
        self.refresh_token.is_some() && self.client_id.is_some()
    }

    fn usable(&self, now: DateTime<Utc>) -> bool {
        self.access_valid(now) || self.renewable()
    }

    /// Freshest first: an unexpired access token, then the latest expiry (no expiry last:
    /// unknown), then one that can renew.
    fn rank(&self, now: DateTime<Utc>) -> (bool, bool, i64, bool) {
        (
            self.access_valid(now),
            self.expires_at.is_some(),
            self.expires_at.map(|t| t.timestamp_millis()).unwrap_or(0),
            self.renewable(),
        )
    }
}

/// The targets of the catalog's remote OAuth-capable entries (`${VAR}`s resolved as the
/// catalog's keys are), each with the mcp-remote invocations `clients` configure for it.
/// Entries whose URL or key cannot be computed now are left out, and so are entries the user
/// turned off (`"enabled": false`: out of use whatever else says so).
pub fn catalog_targets(patchbay: &Patchbay, clients: &[ClientServer]) -> Vec<ImportTarget> {
    let resolve = |v: &str| patchbay.resolve_variable(v);
    patchbay
        .catalog()
        .servers()
        .filter(|e| e.is_oauth_capable() && e.enabled != Some(false))
        .filter_map(|e| {
            let url = patchbay_catalog::expand(e.transport.url()?, &resolve).ok()?;
            let key = e.credential_key(&resolve).ok().flatten()?;
            let mut target = ImportTarget::new(e.name.as_str(), url, key);
            target.auth_server_metadata_url = e
                .oauth
                .as_ref()
                .and_then(|o| o.auth_server_metadata_url.clone());
            Some(target.with_mcp_remote_from(clients))
        })
        .collect()
}

/// Every usable token the other tools hold for each target, by target index. Reads only.
fn find_tokens(
    targets: &[ImportTarget],
    sources: &ImportSources,
    now: DateTime<Utc>,
    errors: &mut Vec<String>,
) -> HashMap<usize, Vec<Found>> {
    let mut found: HashMap<usize, Vec<Found>> = HashMap::new();
    let mut add = |index: usize, f: Found| {
        if f.usable(now) {
            found.entry(index).or_default().push(f);
        }
    };
    let match_url = |url: &str| -> Vec<usize> {
        targets
            .iter()
            .enumerate()
            .filter(|(_, t)| patchbay_catalog::same_url(url, &t.server_url))
            .map(|(i, _)| i)
            .collect()
    };

    if let Some(paths) = &sources.runtime_paths {
        let mut stores: Vec<(CredentialSource, Box<dyn RuntimeStore>)> = Vec::new();
        if paths.claude_credentials.exists() || cfg!(target_os = "macos") {
            stores.push((
                CredentialSource::ClaudeCode,
                patchbay_runtimes::claude_keychain::claude_store(paths),
            ));
        }
        if paths.codex_home.exists() {
            match read_codex_config(paths) {
                Ok(config) => {
                    // A keyring cannot be listed: the keys of the servers Codex has configured.
                    let keys = config
                        .servers
                        .iter()
                        .filter_map(|s| s.credential_key.clone())
                        .collect();
                    stores.push((
                        CredentialSource::Codex,
                        patchbay_runtimes::codex::codex_store(paths, config.store_mode, keys),
                    ));
                }
                Err(e) => errors.push(format!("Codex: {e}")),
            }
        }
        for (source, store) in stores {
            let held = match store.read_all() {
                Ok(held) => held,
                Err(e) => {
                    errors.push(format!("{}: {e}", source.display_name()));
                    continue;
                }
            };
            for credential in held {
                for index in match_url(&credential.server_url) {
                    add(
                        index,
                        Found {
                            source,
                            access_token: credential.access_token.clone(),
                            refresh_token: credential.refresh_token.clone(),
                            expires_at: credential.expires_at,
                            scope: credential.scope.clone(),
                            issuer: credential.issuer.clone(),
                            client_id: credential.client_id.clone().filter(|c| !c.is_empty()),
                            client_secret: credential.client_secret.clone(),
                            auth_method: None,
                            redirect_uri: None,
                            resource: None,
                            plaintext_files: Vec::new(),
                        },
                    );
                }
            }
        }
    }

    if let Some(dir) = &sources.mcp_remote_dir {
        let mut by_hash: HashMap<String, (usize, McpRemoteOptions)> = HashMap::new();
        let mut candidates = Vec::new();
        for (index, target) in targets.iter().enumerate() {
            for options in target.mcp_remote_candidates() {
                by_hash
                    .entry(options.hash())
                    .or_insert((index, options.clone()));
                candidates.push(options);
            }
        }
        match read_mcp_remote(dir, &candidates) {
            Ok(scan) => {
                errors.extend(scan.errors.iter().map(|e| format!("mcp-remote: {e}")));
                for entry in scan.credentials {
                    let (Some((index, options)), Some(tokens)) =
                        (by_hash.get(&entry.hash), entry.tokens)
                    else {
                        continue;
                    };
                    let client = entry.client;
                    add(
                        *index,
                        Found {
                            source: CredentialSource::McpRemote,
                            access_token: tokens.access_token,
                            refresh_token: tokens.refresh_token,
                            expires_at: tokens.expires_at,
                            scope: tokens.scope,
                            issuer: tokens
                                .issuer
                                .or_else(|| client.as_ref().and_then(|c| c.issuer.clone())),
                            client_id: client.as_ref().map(|c| c.client_id.clone()),
                            client_secret: client.as_ref().and_then(|c| c.client_secret.clone()),
                            auth_method: client
                                .as_ref()
                                .and_then(|c| c.token_endpoint_auth_method.as_deref())
                                .map(ClientAuthMethod::from),
                            redirect_uri: client
                                .as_ref()
                                .and_then(|c| c.redirect_uris.first().cloned()),
                            resource: options.resource.clone(),
                            plaintext_files: entry.files,
                        },
                    );
                }
            }
            Err(e) => errors.push(format!("mcp-remote: {e}")),
        }
    }
    found
}

/// Adopt, for every target Patchbay holds no credential for, the freshest usable token another
/// tool holds, with its client (see the module doc). Reads the other tools' stores (blocking,
/// on a blocking thread) and, per adopted credential, the authorization server's metadata
/// (bounded by `options`). Never overwrites a stored credential.
pub async fn import(
    patchbay: &Patchbay,
    targets: &[ImportTarget],
    sources: &ImportSources,
    options: &ImportOptions,
) -> Result<ImportReport, CoreError> {
    let started = std::time::Instant::now();
    let now = patchbay.now();
    let vault = patchbay.vault();
    let mut report = ImportReport::default();

    let mut open: Vec<ImportTarget> = Vec::new();
    for target in targets {
        if vault.credential_row(&target.credential_key)?.is_some() {
            report.not_adopted.push(NotAdopted {
                connector: target.connector.clone(),
                reason: "Patchbay already holds a credential for it".into(),
            });
        } else if !open
            .iter()
            .any(|t| t.credential_key == target.credential_key)
        {
            open.push(target.clone());
        }
    }
    if open.is_empty() {
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        return Ok(report);
    }

    let (found, errors) = {
        let (open, sources) = (open.clone(), sources.clone());
        tokio::task::spawn_blocking(move || {
            let mut errors = Vec::new();
            let found = find_tokens(&open, &sources, now, &mut errors);
            (found, errors)
        })
        .await
        .map_err(|e| CoreError::TaskFailed {
            task: "the import's read of the stores",
            message: e.to_string(),
        })?
    };
    report.errors = errors;

    // The freshest usable token per target; then every adopted one's discovery at once, so
    // an unreachable issuer costs one discovery bound, not one per connector.
    let http = Http::new(options.request_timeout);
    let mut discoveries = tokio::task::JoinSet::new();
    for (index, target) in open.iter().enumerate() {
        let Some(mut candidates) = found.get(&index).cloned() else {
            report.not_adopted.push(NotAdopted {
                connector: target.connector.clone(),
                reason: "no usable token in Claude Code, Codex or mcp-remote".into(),
            });
            continue;
        };
        candidates.sort_by_key(|f| std::cmp::Reverse(f.rank(now)));
        let chosen = candidates.remove(0);
        let (http, options, target) = (http.clone(), options.clone(), target.clone());
        discoveries.spawn(async move {
            let granted = grant_for(&http, &options, &target, &chosen).await;
            (index, chosen, granted)
        });
    }
    let mut chosen_all = Vec::new();
    while let Some(done) = discoveries.join_next().await {
        chosen_all.push(done.map_err(|e| CoreError::TaskFailed {
            task: "the import's discovery task",
            message: e.to_string(),
        })?);
    }
    chosen_all.sort_by_key(|(index, _, _)| *index);
    for (index, chosen, (grant, issuer, note)) in chosen_all {
        let target = &open[index];
        let row = CredentialRow {
            credential_key: target.credential_key.clone(),
            server_name: target.connector.clone(),
            server_url: Some(target.server_url.clone()),
            expires_at: chosen.expires_at,
            has_refresh_token: false,
            one_shot: false,
            issuer,
            client_id: chosen.client_id.clone(),
            scope: chosen.scope.clone(),
            updated_at: now,
            rotated_by: None,
            rotated_at: None,
        };
        let tokens = TokenSet {
            access_token: chosen.access_token.clone(),
            refresh_token: chosen.refresh_token.clone(),
        };
        match vault.put_imported_credential(&row, &tokens, grant.as_ref(), chosen.source)? {
            Imported::Stored => {
                tracing::info!(
                    connector = target.connector,
                    source = chosen.source.id(),
                    "adopted a credential already on the machine"
                );
                report.adopted.push(Adopted {
                    connector: target.connector.clone(),
                    credential_key: target.credential_key.clone(),
                    source: chosen.source,
                    client_id: chosen.client_id.clone(),
                    expires_at: chosen.expires_at,
                    has_refresh_token: chosen.refresh_token.is_some(),
                    renewable: grant.is_some() && chosen.renewable(),
                    note,
                    plaintext_files: chosen.plaintext_files.clone(),
                })
            }
            // Stored meanwhile (another process authorized or imported it).
            Imported::AlreadyHeld => report.not_adopted.push(NotAdopted {
                connector: target.connector.clone(),
                reason: "Patchbay already holds a credential for it".into(),
            }),
        }
    }
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

/// The grant the adopted pair renews with, the issuer to record, and a note when it cannot
/// renew by itself.
async fn grant_for(
    http: &Http,
    options: &ImportOptions,
    target: &ImportTarget,
    found: &Found,
) -> (Option<Grant>, Option<String>, Option<String>) {
    let Some(client_id) = found.client_id.clone() else {
        let note = "the client it was issued to is unknown: refresh needs authorizing in Patchbay";
        return (None, found.issuer.clone(), Some(note.into()));
    };
    let discovered = tokio::time::timeout(options.discovery_timeout, async {
        let mut why = Vec::new();
        if let Some(issuer) = &found.issuer {
            match discovery::server_metadata(http, issuer).await {
                Ok(m) => return Ok(m),
                Err(e) => why.push(e.to_string()),
            }
        }
        discovery::discover(
            http,
            &target.server_url,
            target.auth_server_metadata_url.as_deref(),
        )
        .await
        .map(|d| d.server)
        .map_err(|e| {
            why.push(e.to_string());
            why.join("; ")
        })
    })
    .await
    .unwrap_or_else(|_| {
        Err(format!(
            "no answer within {} ms",
            options.discovery_timeout.as_millis()
        ))
    });
    let metadata = match discovered {
        Ok(m) => m,
        Err(why) => {
            let note = format!(
                "refresh needs authorizing in Patchbay: cannot find its token endpoint ({why})"
            );
            return (None, found.issuer.clone(), Some(note));
        }
    };
    // The stated method is kept as named, one Patchbay cannot perform included (`Other`: the
    // grant then refreshes as a public client would; see `patchbay_oauth::token`).
    let auth_method = match (&found.client_secret, &found.auth_method) {
        (_, Some(method)) => method.clone(),
        (None, None) => ClientAuthMethod::None,
        // A secret and no stated method: the server's first of basic/post (RFC 7591's default
        // is basic); the refresher corrects it once if the server wants the other.
        (Some(_), None) => metadata
            .token_endpoint_auth_methods_supported
            .as_ref()
            .and_then(|m| {
                m.iter()
                    .map(|m| ClientAuthMethod::from(m.as_str()))
                    .find(ClientAuthMethod::sends_secret)
            })
            .unwrap_or(ClientAuthMethod::ClientSecretBasic),
    };
    let note = (found.refresh_token.is_none())
        .then(|| "no refresh token: authorize in Patchbay when it lapses".to_string());
    let grant = Grant {
        credential_key: target.credential_key.clone(),
        issuer: metadata.issuer.clone(),
        token_endpoint: metadata.token_endpoint.clone(),
        token_auth_method: auth_method,
        client_id,
        client_secret: found.client_secret.clone(),
        // The other tool's registration: never ours to forget.
        client_registered: false,
        redirect_uri: found.redirect_uri.clone().unwrap_or_default(),
        resource: Some(
            found
                .resource
                .clone()
                .unwrap_or_else(|| target.server_url.clone()),
        ),
        scopes: found.scope.clone(),
    };
    (Some(grant), Some(metadata.issuer), note)
}

/// mcp-remote's plaintext files for `target` in `sources`' store directory: every file of the
/// entry (tokens, registration, transient ones) whose hash one of the target's invocations
/// names. Empty when there is none.
pub fn plaintext_files(
    target: &ImportTarget,
    sources: &ImportSources,
) -> Result<Vec<PathBuf>, CoreError> {
    let Some(dir) = &sources.mcp_remote_dir else {
        return Ok(Vec::new());
    };
    let candidates = target.mcp_remote_candidates();
    let scan = read_mcp_remote(dir, &candidates)?;
    Ok(scan
        .credentials
        .into_iter()
        .filter(|c| c.matched.is_some())
        .flat_map(|c| c.files)
        .collect())
}

/// Delete mcp-remote's plaintext files for `target`, when asked: only once Patchbay holds a
/// credential for it (else they would be the only copy), and only files in mcp-remote's store
/// directory named with the hash prefix one of the target's invocations computes (listed
/// afresh; links are removed, never followed). Returns the files deleted.
pub fn delete_plaintext(
    patchbay: &Patchbay,
    target: &ImportTarget,
    sources: &ImportSources,
) -> Result<Vec<PathBuf>, CoreError> {
    if patchbay
        .vault()
        .credential_row(&target.credential_key)?
        .is_none()
    {
        return Err(CoreError::Refused {
            connector: target.connector.clone(),
            why: format!(
                "Patchbay holds no credential for {}: mcp-remote's files may be the only copy, so they are kept (run `patchbay import` first)",
                target.connector
            ),
        });
    }
    let Some(dir) = &sources.mcp_remote_dir else {
        return Ok(Vec::new());
    };
    let hashes: Vec<String> = target
        .mcp_remote_candidates()
        .iter()
        .map(McpRemoteOptions::hash)
        .collect();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CoreError::io("list", dir, e)),
    };
    let mut deleted = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| CoreError::io("list", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((prefix, _)) = name.split_once('_') else {
            continue;
        };
        if !hashes.iter().any(|h| h.eq_ignore_ascii_case(prefix)) {
            continue;
        }
        let path = entry.path();
        let kind = std::fs::symlink_metadata(&path).map_err(|e| CoreError::io("read", &path, e))?;
        if kind.is_dir() {
            continue;
        }
        std::fs::remove_file(&path).map_err(|e| CoreError::io("delete", &path, e))?;
        deleted.push(path);
    }
    deleted.sort();
    Ok(deleted)
}

/// The whole import as the app runs it at start: every connector without a credential, the
/// clients' mcp-remote invocations read from the patchbay's client setup (none when it reads no
/// clients), the tools' stores from the process environment, default bounds.
pub async fn import_from_this_machine(patchbay: &Patchbay) -> Result<ImportReport, CoreError> {
    let clients = patchbay
        .client_setup()
        .map(|setup| patchbay_runtimes::clients::read_all(&setup.paths, &setup.projects).servers)
        .unwrap_or_default();
    let targets = catalog_targets(patchbay, &clients);
    import(
        patchbay,
        &targets,
        &ImportSources::from_env(),
        &ImportOptions::default(),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchbay_catalog::same_url;

    #[test]
    fn urls_match_with_one_trailing_slash_forgiven() {
        assert!(same_url("http://a/mcp", "http://a/mcp/"));
        assert!(same_url(" http://a/mcp/ ", "http://a/mcp"));
        assert!(!same_url("http://a/mcp", "http://a/mcp2"));
        assert!(!same_url("", ""));
    }

    #[test]
    fn a_plain_invocation_is_always_a_candidate_with_and_without_the_slash() {
        let target = ImportTarget::new("x", "http://a/mcp", CredentialKey("x|1".into()));
        let urls: Vec<String> = target
            .mcp_remote_candidates()
            .into_iter()
            .map(|o| o.server_url)
            .collect();
        assert_eq!(urls, ["http://a/mcp", "http://a/mcp/"]);
    }

    #[test]
    fn the_freshest_usable_token_ranks_first() {
        let now = DateTime::from_timestamp_millis(1_000_000).unwrap();
        let at = |ms: i64| Some(DateTime::from_timestamp_millis(ms).unwrap());
        let found = |expires_at, refresh: bool| Found {
            source: CredentialSource::Codex,
            access_token: Secret::new("a"),
            refresh_token: refresh.then(|| Secret::new("r")),
            expires_at,
            scope: None,
            issuer: None,
            client_id: Some("c".into()),
            client_secret: None,
            auth_method: None,
            redirect_uri: None,
            resource: None,
            plaintext_files: Vec::new(),
        };
        let expired_no_refresh = found(at(999_000), false);
        assert!(!expired_no_refresh.usable(now));
        let expired_refresh = found(at(999_000), true);
        assert!(expired_refresh.usable(now));
        let later = found(at(5_000_000), false);
        let sooner = found(at(2_000_000), true);
        let mut all = [expired_refresh.clone(), sooner.clone(), later.clone()];
        all.sort_by_key(|f| std::cmp::Reverse(f.rank(now)));
        assert_eq!(all[0].expires_at, later.expires_at);
        assert_eq!(all[1].expires_at, sooner.expires_at);
        assert_eq!(all[2].expires_at, expired_refresh.expires_at);
    }
}

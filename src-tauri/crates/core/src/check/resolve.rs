//! Resolving a catalog entry into what is checked: `${VAR}`s from the vault, then the
//! environment; an OAuth-capable server's stored token as its bearer; a static credential's
//! headers named so a 401 can say which value to fix; an npx server's own npm cache.

use super::{Checker, Skip};
use crate::Paths;
use patchbay_catalog::{expand, Catalog, CredentialKey, ServerEntry, Transport};
use patchbay_check::{
    npm_cache, AuthKind, CheckTarget, Endpoint, HttpEndpoint, StdioLaunch, TransportKind,
};
use patchbay_status::Action;
use patchbay_vault::Secret;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

impl Checker {
    /// Resolve `entry` the way a runtime start would see it.
    pub(super) fn target_for(
        &self,
        catalog: &Catalog,
        entry: &ServerEntry,
    ) -> Result<CheckTarget, Skip> {
        let mut expansion = crate::expansion::Expansion::new(&self.patchbay);
        let mut expand_all = |text: &str| expansion.expand(text);
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
        if !expansion.missing().is_empty() {
            return Err(Skip(
                format!(
                    "missing configuration ({} has no value)",
                    expansion.missing().join(", ")
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
            extra_secrets: expansion.into_used(),
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

pub(super) fn kind_of(transport: &Transport) -> TransportKind {
    match transport {
        Transport::Stdio { .. } => TransportKind::Stdio,
        Transport::StreamableHttp { .. } => TransportKind::StreamableHttp,
        Transport::Sse { .. } => TransportKind::Sse,
    }
}

//! mcp-remote's plaintext OAuth store, read-only: the tokens and the dynamic client registration
//! `npx mcp-remote URL` keeps per server, so Patchbay can adopt them (and offer the files for
//! deletion) instead of authorizing again.
//!
//! Layout, as mcp-remote 0.15.1 writes it (read in its `dist/chunk-*.js`, `src/lib/mcp-auth-config.ts`
//! and `getServerUrlHash`; measured with a real `npx mcp-remote URL` run against the MCP SDK's example
//! OAuth server on loopback, see tests/clients_mcp_remote.rs):
//! - Directory: `$MCP_REMOTE_CONFIG_DIR/mcp-remote-v1/`, else `~/.mcp-auth/mcp-remote-v1/`
//!   (`os.homedir()`: `USERPROFILE` on Windows). `1` is its `CONFIG_STORE_VERSION`, not the package
//!   version. Files are written mode 0600 via temp + rename.
//! - Per server a prefix `<hash>_`: `<hash>_tokens.json` (`access_token`, `token_type`, `expires_in`,
//!   `scope`, `refresh_token`, `issuer`, `expires_at` in epoch **milliseconds**, `requested_scope`) and
//!   `<hash>_client_info.json` (the RFC 7591 registration: `client_id`, optional `client_secret`,
//!   `token_endpoint_auth_method`, `redirect_uris`, `grant_types`, `scope`, `issuer`, ...). Transient
//!   files share the prefix: `refresh_in_progress.json` (a lease), `code_verifier_<state>.txt`,
//!   `discovery_state_<state>.json`, `debug.log`.
//! - The hash is one-way: md5 hex of `parts.join("|")`, parts = the server URL exactly as given on
//!   the command line, then when present `--resource` (trimmed), the `--authorize-param`s as
//!   `JSON.stringify(params, sortedKeys)`, the `--header`s likewise (values as given, before its
//!   `${VAR}` substitution), `--client-metadata-url`, `--token-endpoint` (as `new URL(v).toString()`
//!   normalises it; we take it as given). So a store entry is named by matching candidates (the
//!   servers configured in clients, catalog URLs) by computing the same hash: [`McpRemoteOptions::hash`].
//! - With `--static-oauth-client-info` the client is not saved (no `client_info.json`): the
//!   registration then lives in the client's config, not here.

use crate::RuntimeError;
use chrono::{DateTime, TimeZone, Utc};
use indexmap::IndexMap;
use patchbay_vault::Secret;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Overrides the base directory (`~/.mcp-auth`).
pub const CONFIG_DIR_ENV: &str = "MCP_REMOTE_CONFIG_DIR";
/// The versioned store directory inside the base (mcp-remote's `CONFIG_STORE_VERSION` = 1).
pub const STORE_DIR_NAME: &str = "mcp-remote-v1";

/// mcp-remote's store directory: `$MCP_REMOTE_CONFIG_DIR/mcp-remote-v1`, else
/// `<home>/.mcp-auth/mcp-remote-v1` (an empty variable counts as unset, as its `||` does).
pub fn mcp_remote_dir(home: &Path, env: crate::config::Resolver<'_>) -> PathBuf {
    let base = env(CONFIG_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".mcp-auth"));
    base.join(STORE_DIR_NAME)
}

/// What enters mcp-remote's per-server hash: one invocation's server URL and options.
#[derive(Clone, PartialEq, Eq)]
pub struct McpRemoteOptions {
    /// Exactly as given (no trimming, no trailing-slash forgiveness: the hash sees the raw text).
    pub server_url: String,
    pub resource: Option<String>,
    pub authorize_params: IndexMap<String, String>,
    /// Header values as given on the command line; they may be literal credentials.
    pub headers: IndexMap<String, Secret>,
    pub client_metadata_url: Option<String>,
    pub token_endpoint: Option<String>,
}

impl std::fmt::Debug for McpRemoteOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpRemoteOptions")
            .field("server_url", &self.server_url)
            .field("resource", &self.resource)
            .field("authorize_params", &self.authorize_params.keys())
            .field("headers", &self.headers)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("token_endpoint", &self.token_endpoint)
            .finish()
    }
}

impl McpRemoteOptions {
    /// A plain `mcp-remote URL` run.
    pub fn new(server_url: impl Into<String>) -> McpRemoteOptions {
        McpRemoteOptions {
            server_url: server_url.into(),
            resource: None,
            authorize_params: IndexMap::new(),
            headers: IndexMap::new(),
            client_metadata_url: None,
            token_endpoint: None,
        }
    }

    /// The arguments after `mcp-remote` (the URL first), parsed as its `parseCommandLineArgs` does
    /// for the parts that enter the hash. `None` when there is no URL. `--header-file` is not read
    /// (its headers would change the hash: such a run is not matched).
    pub fn from_args(args: &[String]) -> Option<McpRemoteOptions> {
        let mut rest: Vec<&str> = Vec::new();
        let mut headers = IndexMap::new();
        let mut i = 0;
        while i < args.len() {
            if args[i] == "--header" && i + 1 < args.len() {
                if let Some((name, value)) = parse_header_line(&args[i + 1]) {
                    headers.insert(name, Secret::new(value));
                }
                i += 2;
                continue;
            }
            rest.push(&args[i]);
            i += 1;
        }
        let server_url = rest.first()?.to_string();
        let value_after = |flag: &str| {
            let at = rest.iter().position(|a| *a == flag)?;
            rest.get(at + 1).map(|v| v.to_string())
        };
        let mut resource = value_after("--resource")
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty());
        if rest.contains(&"--disable-resource-parameter") {
            resource = None;
        }
        let mut authorize_params = IndexMap::new();
        for pair in rest.windows(2) {
            if pair[0] == "--authorize-param" {
                if let Some((key, value)) = pair[1].split_once('=') {
                    if !key.trim().is_empty() {
                        authorize_params.insert(key.trim().to_string(), value.to_string());
                    }
                }
            }
        }
        Some(McpRemoteOptions {
            server_url,
            resource,
            authorize_params,
            headers,
            client_metadata_url: value_after("--client-metadata-url").map(|v| v.trim().to_string()),
            token_endpoint: value_after("--token-endpoint").map(|v| v.trim().to_string()),
        })
    }

    /// mcp-remote's `getServerUrlHash`: md5 hex of the parts joined by `|`.
    pub fn hash(&self) -> String {
        let mut parts = vec![self.server_url.clone()];
        if let Some(resource) = &self.resource {
            parts.push(resource.clone());
        }
        if !self.authorize_params.is_empty() {
            parts.push(sorted_json(
                self.authorize_params
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str())),
            ));
        }
        if !self.headers.is_empty() {
            parts.push(sorted_json(
                self.headers.iter().map(|(k, v)| (k.as_str(), v.expose())),
            ));
        }
        if let Some(url) = &self.client_metadata_url {
            parts.push(url.clone());
        }
        if let Some(url) = &self.token_endpoint {
            parts.push(url.clone());
        }
        md5_hex(parts.join("|").as_bytes())
    }
}

/// `JSON.stringify(object, Object.keys(object).sort())` for a flat string map: compact, keys in
/// UTF-16 code-unit order (JS's default sort; the same as byte order for the ASCII names allowed).
fn sorted_json<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut pairs: Vec<(&str, &str)> = pairs.collect();
    pairs.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    let mut object = Map::new();
    for (k, v) in pairs {
        object.insert(k.to_string(), Value::String(v.to_string()));
    }
    // serde_json escapes strings as JSON.stringify does for the characters headers can hold.
    Value::Object(object).to_string()
}

/// mcp-remote's `parseHeaderLine`: `^([A-Za-z0-9_-]+):\s*(.*)$`.
fn parse_header_line(line: &str) -> Option<(String, String)> {
    let (name, value) = line.split_once(':')?;
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        || value.contains('\n')
    {
        return None;
    }
    Some((name.to_string(), value.trim_start().to_string()))
}

/// Whether `command args` runs mcp-remote, and with what: `npx [-y] mcp-remote[@version] URL ...`,
/// `bunx`/`pnpm dlx` likewise, or an installed `mcp-remote URL ...`.
pub fn invocation(command: &str, args: &[String]) -> Option<McpRemoteOptions> {
    let base = crate::clients::command_basename(command);
    let is_package = |a: &str| a == "mcp-remote" || a.starts_with("mcp-remote@");
    let after = if base == "mcp-remote" {
        0
    } else if matches!(base.as_str(), "npx" | "bunx" | "pnpm" | "yarn") {
        // The first argument that is not a runner flag (`-y`, `--yes`, `dlx`) is the package.
        let at = args
            .iter()
            .position(|a| !(a.starts_with('-') || a == "dlx"))?;
        if !is_package(&args[at]) {
            return None;
        }
        at + 1
    } else {
        return None;
    };
    McpRemoteOptions::from_args(&args[after..])
}

/// The tokens mcp-remote saved for one server.
#[derive(Debug, Clone)]
pub struct McpRemoteTokens {
    pub access_token: Secret,
    pub refresh_token: Option<Secret>,
    pub token_type: Option<String>,
    pub scope: Option<String>,
    /// From `expires_at` (epoch milliseconds).
    pub expires_at: Option<DateTime<Utc>>,
    pub issuer: Option<String>,
}

/// The OAuth client mcp-remote registered for one server (the tokens were issued to it: a
/// refresh must present this `client_id`).
#[derive(Debug, Clone)]
pub struct McpRemoteClient {
    pub client_id: String,
    pub client_secret: Option<Secret>,
    pub token_endpoint_auth_method: Option<String>,
    pub redirect_uris: Vec<String>,
    pub grant_types: Vec<String>,
    pub scope: Option<String>,
    pub issuer: Option<String>,
}

/// One server's entry in mcp-remote's store.
#[derive(Debug, Clone)]
pub struct McpRemoteCredential {
    /// The 32-hex prefix.
    pub hash: String,
    /// The candidate whose hash matched; `None` when no candidate did (the URL is unknown).
    pub matched: Option<McpRemoteOptions>,
    pub tokens: Option<McpRemoteTokens>,
    pub client: Option<McpRemoteClient>,
    /// `<hash>_tokens.json`, when present.
    pub tokens_path: Option<PathBuf>,
    /// `<hash>_client_info.json`, when present.
    pub client_info_path: Option<PathBuf>,
    /// Every file with this prefix (the two above and transient ones), for "offer deletion".
    pub files: Vec<PathBuf>,
}

impl McpRemoteCredential {
    pub fn server_url(&self) -> Option<&str> {
        self.matched.as_ref().map(|o| o.server_url.as_str())
    }
}

/// What [`read_mcp_remote`] found: the entries, and the files it could not read (one bad file
/// never hides the other servers).
#[derive(Debug, Default)]
pub struct McpRemoteScan {
    pub credentials: Vec<McpRemoteCredential>,
    pub errors: Vec<RuntimeError>,
}

/// Read mcp-remote's store directory (see [`mcp_remote_dir`]); a missing directory is empty.
/// Each entry's server is named by the first of `candidates` whose [`McpRemoteOptions::hash`]
/// equals its prefix. Entries are ordered by hash. Nothing is written.
pub fn read_mcp_remote(
    dir: &Path,
    candidates: &[McpRemoteOptions],
) -> Result<McpRemoteScan, RuntimeError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(McpRemoteScan::default()),
        Err(e) => return Err(crate::atomic::io_error(dir, "cannot list", e)),
    };
    let mut by_hash: std::collections::BTreeMap<String, Vec<PathBuf>> = Default::default();
    for entry in entries {
        let entry = entry.map_err(|e| crate::atomic::io_error(dir, "cannot list", e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((hash, _)) = name.split_once('_') else {
            continue;
        };
        if hash.len() == 32 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            by_hash
                .entry(hash.to_ascii_lowercase())
                .or_default()
                .push(entry.path());
        }
    }
    let known: Vec<(String, &McpRemoteOptions)> =
        candidates.iter().map(|c| (c.hash(), c)).collect();
    let mut scan = McpRemoteScan::default();
    for (hash, mut files) in by_hash {
        files.sort();
        let named = |suffix: &str| {
            files
                .iter()
                .find(|f| {
                    f.file_name()
                        .is_some_and(|n| n.to_string_lossy() == format!("{hash}_{suffix}"))
                })
                .cloned()
        };
        let tokens_path = named("tokens.json");
        let client_info_path = named("client_info.json");
        if tokens_path.is_none() && client_info_path.is_none() {
            continue; // only transient files (an abandoned sign-in)
        }
        let tokens = match tokens_path.as_deref().map(read_tokens).transpose() {
            Ok(t) => t,
            Err(e) => {
                scan.errors.push(e);
                continue;
            }
        };
        let client = match client_info_path.as_deref().map(read_client).transpose() {
            Ok(c) => c,
            Err(e) => {
                scan.errors.push(e);
                continue;
            }
        };
        let matched = known
            .iter()
            .find(|(h, _)| *h == hash)
            .map(|(_, c)| (*c).clone());
        scan.credentials.push(McpRemoteCredential {
            hash,
            matched,
            tokens,
            client,
            tokens_path,
            client_info_path,
            files,
        });
    }
    Ok(scan)
}

fn read_object(path: &Path) -> Result<Map<String, Value>, RuntimeError> {
    crate::atomic::read_json_object(path)?.ok_or_else(|| RuntimeError::Io {
        path: path.to_path_buf(),
        message: "disappeared while reading".into(),
    })
}

fn malformed(path: &Path, message: String) -> RuntimeError {
    RuntimeError::Malformed {
        path: path.to_path_buf(),
        message,
    }
}

fn opt_string(
    path: &Path,
    object: &Map<String, Value>,
    key: &str,
) -> Result<Option<String>, RuntimeError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(malformed(
            path,
            format!(
                "{key}: expected a string, found {}",
                crate::atomic::json_kind(other)
            ),
        )),
    }
}

fn string_list(
    path: &Path,
    object: &Map<String, Value>,
    key: &str,
) -> Result<Vec<String>, RuntimeError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| malformed(path, format!("{key}[{i}] is not a string")))
            })
            .collect(),
        Some(other) => Err(malformed(
            path,
            format!(
                "{key}: expected an array, found {}",
                crate::atomic::json_kind(other)
            ),
        )),
    }
}

fn read_tokens(path: &Path) -> Result<McpRemoteTokens, RuntimeError> {
    let object = read_object(path)?;
    let access_token = opt_string(path, &object, "access_token")?
        .ok_or_else(|| malformed(path, "access_token is missing".into()))?;
    // zod's `coerce.number()`: a number, or a string holding one.
    let expires_at = match object.get("expires_at") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        Some(other) => {
            return Err(malformed(
                path,
                format!(
                    "expires_at: expected epoch milliseconds, found {}",
                    crate::atomic::json_kind(other)
                ),
            ))
        }
    }
    .and_then(|ms| Utc.timestamp_millis_opt(ms as i64).single());
    Ok(McpRemoteTokens {
        access_token: Secret::new(access_token),
        refresh_token: opt_string(path, &object, "refresh_token")?.map(Secret::new),
        token_type: opt_string(path, &object, "token_type")?,
        scope: opt_string(path, &object, "scope")?,
        expires_at,
        issuer: opt_string(path, &object, "issuer")?,
    })
}

fn read_client(path: &Path) -> Result<McpRemoteClient, RuntimeError> {
    let object = read_object(path)?;
    Ok(McpRemoteClient {
        client_id: opt_string(path, &object, "client_id")?
            .ok_or_else(|| malformed(path, "client_id is missing".into()))?,
        client_secret: opt_string(path, &object, "client_secret")?.map(Secret::new),
        token_endpoint_auth_method: opt_string(path, &object, "token_endpoint_auth_method")?,
        redirect_uris: string_list(path, &object, "redirect_uris")?,
        grant_types: string_list(path, &object, "grant_types")?,
        scope: opt_string(path, &object, "scope")?,
        issuer: opt_string(path, &object, "issuer")?,
    })
}

/// MD5 (RFC 1321) as lowercase hex: only to name mcp-remote's files the way it does (an
/// identifier, not a security boundary).
pub fn md5_hex(input: &[u8]) -> String {
    use md5::{Digest, Md5};
    Md5::digest(input)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_matches_rfc_1321_vectors() {
        // RFC 1321 appendix A.5.
        assert_eq!(md5_hex(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex(b"abc"), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(
            md5_hex(
                b"12345678901234567890123456789012345678901234567890123456789012345678901234567890"
            ),
            "57edf4a22be3c955ac49da2e2107b67a"
        );
        // The reference's measured prefix for a plain URL.
        assert_eq!(
            McpRemoteOptions::new("http://localhost:3100/mcp").hash(),
            "d73d1702bc76ec1e4018a54cb8815039"
        );
    }

    #[test]
    fn options_enter_the_hash_as_mcp_remote_joins_them() {
        // Pinned with node: crypto.createHash("md5").update(
        //   'https://x.example/mcp|https://x.example|{"audience":"api","org":"7"}|{"A-B":"1","X-Team":"${TEAM}"}'
        // ).digest("hex")
        let args: Vec<String> = [
            "https://x.example/mcp",
            "--header",
            "X-Team: ${TEAM}",
            "--header",
            "A-B:1",
            "--resource",
            " https://x.example ",
            "--authorize-param",
            "org=7",
            "--authorize-param",
            "audience=api",
            "--allow-http",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let options = McpRemoteOptions::from_args(&args).unwrap();
        assert_eq!(options.server_url, "https://x.example/mcp");
        assert_eq!(options.resource.as_deref(), Some("https://x.example"));
        assert_eq!(options.hash(), "8c440bb56d46acfdfa2cb30e9035e807");
    }

    #[test]
    fn invocations_are_recognised() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let found = invocation("npx", &s(&["-y", "mcp-remote@0.15.1", "https://a/mcp"])).unwrap();
        assert_eq!(found.server_url, "https://a/mcp");
        assert!(invocation("/usr/local/bin/mcp-remote", &s(&["https://a/mcp"])).is_some());
        assert!(invocation("npx.cmd", &s(&["mcp-remote", "https://a/mcp"])).is_some());
        assert!(invocation("npx", &s(&["-y", "@scope/other", "https://a/mcp"])).is_none());
        assert!(invocation("node", &s(&["mcp-remote", "https://a/mcp"])).is_none());
    }

    #[test]
    fn debug_never_shows_header_values() {
        let args: Vec<String> = [
            "https://a/mcp",
            "--header",
            "Authorization: Bearer sk-live-123",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let options = McpRemoteOptions::from_args(&args).unwrap();
        let shown = format!("{options:?}");
        assert!(!shown.contains("sk-live-123"), "{shown}");
        assert!(shown.contains("Authorization"), "{shown}");
    }
}

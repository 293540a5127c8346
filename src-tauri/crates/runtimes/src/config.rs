//! Finding what to bridge: where each runtime keeps its files, the remote MCP servers configured
//! in it, the key each one's credential is filed under, and which catalog entries they are.
//!
//! Read-only: nothing here writes a runtime's config (adding a server is
//! [`crate::claude::add_server`]).

use crate::{Runtime, RuntimeError};
use indexmap::IndexMap;
use patchbay_catalog::{credential_key, expand, CredentialKey, ServerEntry};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// A resolver for `${VAR}` placeholders (the caller decides: environment, vault, both).
pub type Resolver<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The home directory the runtimes and the MCP clients use, from the process environment: on
/// Windows `USERPROFILE` (Node's `os.homedir()`, which Claude Code and the Node-based clients
/// call, reads it; Codex asks Windows for the same profile folder), not a `HOME` that Git Bash,
/// MSYS or a user set to somewhere else; elsewhere `HOME`. `None` when neither is set.
pub fn home_dir() -> Option<PathBuf> {
    home_from(cfg!(windows), &|name| std::env::var_os(name))
}

/// [`home_dir`] over `env`, as on Windows (`windows`) or not.
fn home_from(windows: bool, env: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let order = if windows {
        ["USERPROFILE", "HOME"]
    } else {
        ["HOME", "USERPROFILE"]
    };
    order
        .into_iter()
        .filter_map(env)
        .find(|home| !home.is_empty())
        .map(PathBuf::from)
}

/// Where the runtimes keep their files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimePaths {
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub claude_config_dir: PathBuf,
    /// Claude Code's credential file: `$CLAUDE_SECURESTORAGE_CONFIG_DIR/.credentials.json`, else
    /// `<claude_config_dir>/.credentials.json`.
    pub claude_credentials: PathBuf,
    /// Claude Code's config with `mcpServers`: `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`.
    pub claude_json: PathBuf,
    /// `$CODEX_HOME`, else `~/.codex`.
    pub codex_home: PathBuf,
    /// The service of Claude Code's macOS Keychain item: [`CLAUDE_KEYCHAIN_SERVICE`], suffixed
    /// `-<first 8 hex of sha256(dir)>` when the config dir is set (see [`claude_keychain_service`]).
    pub claude_keychain_service: String,
    /// Its account: the login user name (see [`claude_keychain_account`]).
    pub claude_keychain_account: String,
    /// Where Claude Code writes its logs (`claude-cli-nodejs` in the platform's cache directory;
    /// see [`crate::claude_logs`]).
    pub claude_cache: PathBuf,
}

/// The service of Claude Code's macOS Keychain item with the default config dir.
pub const CLAUDE_KEYCHAIN_SERVICE: &str = "Claude Code-credentials";

/// The service name Claude Code gives its Keychain item. The reference: `Claude Code-credentials`,
/// suffixed `-<first 8 hex of sha256(config dir)>` when `CLAUDE_CONFIG_DIR` is set. As Claude
/// Code 2.1.332 computes it (read in its binary, not in the reference):
/// `CLAUDE_SECURESTORAGE_CONFIG_DIR`, when defined, decides instead (empty: no suffix; else the
/// hash of its value), and an empty `CLAUDE_CONFIG_DIR` counts as unset. The directory is hashed
/// as the variable spells it (Claude Code NFC-normalizes it first: the same for ASCII paths).
pub fn claude_keychain_service(env: Resolver<'_>) -> String {
    let hashed = match env("CLAUDE_SECURESTORAGE_CONFIG_DIR") {
        Some(dir) => Some(dir).filter(|d| !d.is_empty()),
        None => env("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()),
    };
    match hashed {
        None => CLAUDE_KEYCHAIN_SERVICE.to_string(),
        Some(dir) => {
            use sha2::{Digest, Sha256};
            let digest = Sha256::digest(dir.as_bytes());
            let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
            format!("{CLAUDE_KEYCHAIN_SERVICE}-{hex}")
        }
    }
}

/// The account of Claude Code's Keychain item. The reference does not say; Claude Code 2.1.332
/// uses `$USER` (else the OS user name), and `claude-code-user` when that is not made of
/// `[A-Za-z0-9._-]` only. Here: `$USER`, else `$LOGNAME` (the login user name), same rule.
pub fn claude_keychain_account(env: Resolver<'_>) -> String {
    let name = env("USER")
        .filter(|u| !u.is_empty())
        .or_else(|| env("LOGNAME").filter(|u| !u.is_empty()));
    match name {
        Some(name)
            if name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) =>
        {
            name
        }
        _ => "claude-code-user".to_string(),
    }
}

impl RuntimePaths {
    /// Resolve from an injectable home directory and environment. Empty variables count as unset,
    /// but for `CLAUDE_SECURESTORAGE_CONFIG_DIR` (see below).
    pub fn resolve(home: &Path, env: Resolver<'_>) -> RuntimePaths {
        let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let config_dir = var("CLAUDE_CONFIG_DIR");
        let claude_config_dir = config_dir.clone().unwrap_or_else(|| home.join(".claude"));
        let claude_json = match &config_dir {
            Some(dir) => dir.join(".claude.json"),
            None => home.join(".claude.json"),
        };
        // As Claude Code 2.1.332 reads it: defined but empty means the default `~/.claude`,
        // not `$CLAUDE_CONFIG_DIR` (the same rule as its Keychain service name).
        let credentials_dir = match env("CLAUDE_SECURESTORAGE_CONFIG_DIR") {
            Some(dir) if dir.is_empty() => home.join(".claude"),
            Some(dir) => PathBuf::from(dir),
            None => claude_config_dir.clone(),
        };
        RuntimePaths {
            claude_credentials: credentials_dir.join(".credentials.json"),
            claude_config_dir,
            claude_json,
            codex_home: var("CODEX_HOME").unwrap_or_else(|| home.join(".codex")),
            claude_keychain_service: claude_keychain_service(env),
            claude_keychain_account: claude_keychain_account(env),
            claude_cache: crate::claude_logs::claude_cache_dir(home, env),
        }
    }

    /// From the process environment; `None` when no home directory is known.
    pub fn from_env() -> Option<RuntimePaths> {
        let home = home_dir()?;
        Some(Self::resolve(&home, &|name| std::env::var(name).ok()))
    }

    /// `mcp-needs-auth-cache.json`, beside the credential file (as measured; see the reference).
    pub fn claude_needs_auth_cache(&self) -> PathBuf {
        self.claude_credentials
            .with_file_name("mcp-needs-auth-cache.json")
    }

    pub fn codex_config(&self) -> PathBuf {
        self.codex_home.join("config.toml")
    }

    pub fn codex_credentials(&self) -> PathBuf {
        self.codex_home.join(".credentials.json")
    }
}

/// Where a server is configured.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum ServerScope {
    /// `mcpServers` at the top of `.claude.json`.
    User,
    /// `projects.<path>.mcpServers` in `.claude.json`; the project's path.
    Project(PathBuf),
    /// A project's `.mcp.json`; that file's path.
    McpJson(PathBuf),
    /// `[mcp_servers.<name>]` in Codex's `config.toml`.
    Codex,
}

/// A remote MCP server configured in a runtime.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RuntimeServer {
    pub runtime: Runtime,
    /// The runtime's own name for it: it decides the key, so we write under this name.
    pub name: String,
    /// The transport as Claude Code spells it: `http` or `sse` (Codex: always `http`).
    pub kind: String,
    /// The URL after `${VAR}` expansion (as written when a variable does not resolve).
    pub url: String,
    /// The headers as configured, placeholders NOT expanded: expanded values are often secrets
    /// and this struct is printed and serialized. The key is computed from the expanded values.
    pub headers: IndexMap<String, String>,
    pub scope: ServerScope,
    /// `None` when a `${VAR}` in the url or a header does not resolve: the key is then unknown
    /// (never guessed) and `unresolved` names the variables.
    pub credential_key: Option<CredentialKey>,
    pub unresolved: Vec<String>,
}

/// Every remote server Claude Code has: user scope and every project in `.claude.json`, then
/// the `.mcp.json` of `project` when given. A missing file contributes nothing; a malformed one
/// is an error naming the file.
pub fn read_claude_servers(
    paths: &RuntimePaths,
    project: Option<&Path>,
    resolve: Resolver<'_>,
) -> Result<Vec<RuntimeServer>, RuntimeError> {
    let mut servers = read_claude_json(&paths.claude_json, resolve)?;
    if let Some(project) = project {
        servers.extend(read_mcp_json(&project.join(".mcp.json"), resolve)?);
        return Ok(servers);
    }
    // No project named: every project Claude Code knows (the keys of `projects` in
    // `.claude.json`) may carry its own `.mcp.json`, and its servers are bridged too.
    for dir in claude_project_dirs(&paths.claude_json)? {
        match read_mcp_json(&dir.join(".mcp.json"), resolve) {
            Ok(found) => servers.extend(found),
            // One project's broken file must not hide every other server.
            Err(error) => tracing::warn!("skipping a project's servers: {error}"),
        }
    }
    Ok(servers)
}

/// The project directories `.claude.json` lists under `projects`.
pub fn claude_project_dirs(claude_json: &Path) -> Result<Vec<PathBuf>, RuntimeError> {
    let Some(root) = read_json(claude_json)? else {
        return Ok(Vec::new());
    };
    Ok(match root.get("projects") {
        Some(projects) => as_object(claude_json, "projects", projects)?
            .keys()
            .map(PathBuf::from)
            .collect(),
        None => Vec::new(),
    })
}

/// The remote servers in a `.claude.json` (user scope, then each project).
pub fn read_claude_json(
    path: &Path,
    resolve: Resolver<'_>,
) -> Result<Vec<RuntimeServer>, RuntimeError> {
    let Some(root) = read_json(path)? else {
        return Ok(Vec::new());
    };
    let mut servers = Vec::new();
    if let Some(user) = root.get("mcpServers") {
        let user = as_object(path, "mcpServers", user)?;
        servers.extend(claude_servers(
            path,
            "mcpServers",
            user,
            ServerScope::User,
            resolve,
        )?);
    }
    if let Some(projects) = root.get("projects") {
        for (project, config) in as_object(path, "projects", projects)? {
            let Some(section) = config.get("mcpServers") else {
                continue;
            };
            let at = format!("projects[{project:?}].mcpServers");
            let section = as_object(path, &at, section)?;
            let scope = ServerScope::Project(PathBuf::from(project));
            servers.extend(claude_servers(path, &at, section, scope, resolve)?);
        }
    }
    Ok(servers)
}

/// The remote servers in a project's `.mcp.json` (`{"mcpServers": {...}}`).
pub fn read_mcp_json(
    path: &Path,
    resolve: Resolver<'_>,
) -> Result<Vec<RuntimeServer>, RuntimeError> {
    let Some(root) = read_json(path)? else {
        return Ok(Vec::new());
    };
    match root.get("mcpServers") {
        Some(section) => {
            let section = as_object(path, "mcpServers", section)?;
            claude_servers(
                path,
                "mcpServers",
                section,
                ServerScope::McpJson(path.to_path_buf()),
                resolve,
            )
        }
        None => Ok(Vec::new()),
    }
}

fn claude_servers(
    path: &Path,
    at: &str,
    section: &Map<String, Value>,
    scope: ServerScope,
    resolve: Resolver<'_>,
) -> Result<Vec<RuntimeServer>, RuntimeError> {
    let mut servers = Vec::new();
    for (name, config) in section {
        let where_ = format!("{at}[{name:?}]");
        let config = as_object(path, &where_, config)?;
        // Claude Code requires `type` for remote servers; stdio may omit it. Other types
        // (`stdio`, `sdk`, the IDE ones) carry no OAuth credential of ours.
        let kind = match config.get("type").and_then(Value::as_str) {
            Some(kind @ ("http" | "sse")) => kind,
            _ => continue,
        };
        let url = match config.get("url") {
            Some(Value::String(url)) => url.clone(),
            _ => {
                return Err(malformed(
                    path,
                    format!("{where_}: a {kind} server needs a string \"url\""),
                ))
            }
        };
        let headers = match config.get("headers") {
            None | Some(Value::Null) => IndexMap::new(),
            Some(Value::Object(h)) => {
                let mut headers = IndexMap::new();
                for (header, value) in h {
                    let Some(value) = value.as_str() else {
                        return Err(malformed(
                            path,
                            format!("{where_}.headers[{header:?}] is not a string"),
                        ));
                    };
                    headers.insert(header.clone(), value.to_string());
                }
                headers
            }
            Some(other) => {
                return Err(malformed(
                    path,
                    format!(
                        "{where_}.headers: expected an object, found {}",
                        crate::atomic::json_kind(other)
                    ),
                ))
            }
        };
        servers.push(claude_server(
            name,
            kind,
            &url,
            headers,
            scope.clone(),
            resolve,
        ));
    }
    Ok(servers)
}

/// One Claude Code server and its key: `credential_key(name, kind, url, headers)` with `${VAR}`
/// expanded in the url and the header values (config order kept).
pub fn claude_server(
    name: &str,
    kind: &str,
    url: &str,
    headers: IndexMap<String, String>,
    scope: ServerScope,
    resolve: Resolver<'_>,
) -> RuntimeServer {
    let mut unresolved: Vec<String> = Vec::new();
    let mut note = |names: Vec<String>| {
        for n in names {
            if !unresolved.contains(&n) {
                unresolved.push(n);
            }
        }
    };
    let expanded_url = expand(url, resolve).unwrap_or_else(|names| {
        note(names);
        url.to_string()
    });
    let mut expanded = IndexMap::new();
    for (header, value) in &headers {
        match expand(value, resolve) {
            Ok(v) => {
                expanded.insert(header.clone(), v);
            }
            Err(names) => note(names),
        }
    }
    let credential_key = unresolved
        .is_empty()
        .then(|| credential_key(name, kind, &expanded_url, &expanded));
    RuntimeServer {
        runtime: Runtime::ClaudeCode,
        name: name.to_string(),
        kind: kind.to_string(),
        url: expanded_url,
        headers,
        scope,
        credential_key,
        unresolved,
    }
}

/// Codex's `mcp_oauth_credentials_store`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CodexStoreMode {
    /// The OS keyring when it answers, else the file (Codex's default).
    #[default]
    Auto,
    File,
    Keyring,
}

/// What Patchbay needs from Codex's `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodexConfig {
    pub store_mode: CodexStoreMode,
    pub servers: Vec<RuntimeServer>,
}

/// Read `$CODEX_HOME/config.toml`. A missing file is the default config with no servers.
pub fn read_codex_config(paths: &RuntimePaths) -> Result<CodexConfig, RuntimeError> {
    let path = paths.codex_config();
    let Some(text) = crate::atomic::read_text_bounded(&path)? else {
        return Ok(CodexConfig::default());
    };
    parse_codex_config(&text, &path)
}

/// Parse Codex's `config.toml` text (`path` names it in errors).
pub fn parse_codex_config(text: &str, path: &Path) -> Result<CodexConfig, RuntimeError> {
    let table = crate::toml_text::parse_table(text).map_err(|e| malformed(path, e))?;
    let store_mode = match table.get("mcp_oauth_credentials_store") {
        None => CodexStoreMode::Auto,
        Some(toml::Value::String(mode)) => match mode.as_str() {
            "auto" => CodexStoreMode::Auto,
            "file" => CodexStoreMode::File,
            "keyring" => CodexStoreMode::Keyring,
            other => {
                return Err(malformed(
                    path,
                    format!(
                        "mcp_oauth_credentials_store = {other:?}: expected \"auto\", \"file\" or \"keyring\""
                    ),
                ))
            }
        },
        Some(other) => {
            return Err(malformed(
                path,
                format!(
                    "mcp_oauth_credentials_store: expected a string, found a {}",
                    other.type_str()
                ),
            ))
        }
    };
    let mut servers = Vec::new();
    match table.get("mcp_servers") {
        None => {}
        Some(toml::Value::Table(section)) => {
            for (name, config) in section {
                let Some(config) = config.as_table() else {
                    return Err(malformed(
                        path,
                        format!("[mcp_servers.{name}] is not a table"),
                    ));
                };
                let url = match config.get("url") {
                    None => continue, // a stdio server (`command = ...`)
                    Some(toml::Value::String(url)) => url.clone(),
                    Some(other) => {
                        return Err(malformed(
                            path,
                            format!(
                                "[mcp_servers.{name}] url: expected a string, found a {}",
                                other.type_str()
                            ),
                        ))
                    }
                };
                // Codex's key: the same function with type `http` and no headers, whatever
                // headers the server is configured with.
                let key = credential_key(name, "http", &url, &IndexMap::new());
                servers.push(RuntimeServer {
                    runtime: Runtime::Codex,
                    name: name.clone(),
                    kind: "http".into(),
                    url,
                    headers: IndexMap::new(),
                    scope: ServerScope::Codex,
                    credential_key: Some(key),
                    unresolved: Vec::new(),
                });
            }
        }
        Some(other) => {
            return Err(malformed(
                path,
                format!(
                    "mcp_servers: expected a table, found a {}",
                    other.type_str()
                ),
            ))
        }
    }
    Ok(CodexConfig {
        store_mode,
        servers,
    })
}

/// A runtime server known to be a catalog connector.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Bridge {
    pub runtime_server: RuntimeServer,
    pub catalog_name: String,
}

/// Match runtime servers to catalog entries by URL: exact after trimming whitespace, or else
/// the same endpoint ([`patchbay_catalog::same_url`]: case of scheme and host, a default port,
/// a fragment, one trailing `/`). The difference is forgiven only for matching: the key is
/// always computed from the runtime's own URL exactly as configured, because a trailing slash
/// changes Claude Code's key. The catalog URL's `${VAR:-default}` placeholders
/// take their defaults. Each runtime server is bridged to at most one entry: exact matches
/// first, then loose ones; among several, only the entry with the runtime's own server name
/// (none when no entry has it).
pub fn match_catalog<'a>(
    servers: &[RuntimeServer],
    catalog: impl IntoIterator<Item = &'a ServerEntry>,
) -> Vec<Bridge> {
    let entries: Vec<(String, String)> = catalog
        .into_iter()
        .filter_map(|entry| {
            let url = entry.transport.url()?;
            let url = expand(url, &|_| None).unwrap_or_else(|_| url.to_string());
            Some((entry.name.as_str().to_string(), url.trim().to_string()))
        })
        .collect();
    servers
        .iter()
        .filter_map(|server| {
            let url = server.url.trim();
            let mut same: Vec<&(String, String)> =
                entries.iter().filter(|(_, u)| u == url).collect();
            if same.is_empty() {
                same = entries
                    .iter()
                    .filter(|(_, u)| patchbay_catalog::same_url(u, url))
                    .collect();
            }
            // Several catalog entries on one URL (two accounts of one service): only the one
            // the runtime names is bridged; none when it names neither, so no entry ever gets
            // another's token.
            let found = match same.as_slice() {
                [only] => *only,
                many => *many.iter().find(|(name, _)| *name == server.name)?,
            };
            Some(Bridge {
                runtime_server: server.clone(),
                catalog_name: found.0.clone(),
            })
        })
        .collect()
}

fn read_json(path: &Path) -> Result<Option<Map<String, Value>>, RuntimeError> {
    crate::atomic::read_json_object(path)
}

fn as_object<'v>(
    path: &Path,
    at: &str,
    value: &'v Value,
) -> Result<&'v Map<String, Value>, RuntimeError> {
    value.as_object().ok_or_else(|| {
        malformed(
            path,
            format!(
                "{at}: expected an object, found {}",
                crate::atomic::json_kind(value)
            ),
        )
    })
}

fn malformed(path: &Path, message: String) -> RuntimeError {
    RuntimeError::Malformed {
        path: path.to_path_buf(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_home_is_userprofile_on_windows_and_home_elsewhere() {
        let both = |name: &str| match name {
            "HOME" => Some("/c/Users/ann".into()),
            "USERPROFILE" => Some(r"C:\Users\ann".into()),
            _ => None,
        };
        assert_eq!(home_from(true, &both), Some(PathBuf::from(r"C:\Users\ann")));
        assert_eq!(home_from(false, &both), Some(PathBuf::from("/c/Users/ann")));
        let home_only = |name: &str| (name == "HOME").then(|| "/home/ann".into());
        assert_eq!(
            home_from(true, &home_only),
            Some(PathBuf::from("/home/ann"))
        );
        let empty_profile = |name: &str| match name {
            "USERPROFILE" => Some("".into()),
            "HOME" => Some("/home/ann".into()),
            _ => None,
        };
        assert_eq!(
            home_from(true, &empty_profile),
            Some(PathBuf::from("/home/ann"))
        );
        assert_eq!(home_from(false, &|_: &str| None), None);
    }

    #[test]
    fn paths_follow_the_environment() {
        let home = Path::new("/home/u");
        let none = RuntimePaths::resolve(home, &|_| None);
        assert_eq!(
            none.claude_credentials,
            home.join(".claude/.credentials.json")
        );
        assert_eq!(none.claude_json, home.join(".claude.json"));
        assert_eq!(none.codex_config(), home.join(".codex/config.toml"));
        assert_eq!(
            none.claude_needs_auth_cache(),
            home.join(".claude/mcp-needs-auth-cache.json")
        );

        let env = |name: &str| match name {
            "CLAUDE_CONFIG_DIR" => Some("/c".to_string()),
            "CODEX_HOME" => Some("/x".to_string()),
            _ => None,
        };
        let set = RuntimePaths::resolve(home, &env);
        assert_eq!(set.claude_credentials, Path::new("/c/.credentials.json"));
        assert_eq!(set.claude_json, Path::new("/c/.claude.json"));
        assert_eq!(set.codex_credentials(), Path::new("/x/.credentials.json"));

        let empty_secure = |name: &str| match name {
            "CLAUDE_SECURESTORAGE_CONFIG_DIR" => Some(String::new()),
            "CLAUDE_CONFIG_DIR" => Some("/c".to_string()),
            _ => None,
        };
        let e = RuntimePaths::resolve(home, &empty_secure);
        assert_eq!(e.claude_credentials, home.join(".claude/.credentials.json"));
        assert_eq!(e.claude_config_dir, Path::new("/c"));

        let secure =
            |name: &str| (name == "CLAUDE_SECURESTORAGE_CONFIG_DIR").then(|| "/s".to_string());
        let s = RuntimePaths::resolve(home, &secure);
        assert_eq!(s.claude_credentials, Path::new("/s/.credentials.json"));
        assert_eq!(s.claude_json, home.join(".claude.json"));
    }

    #[test]
    fn the_keychain_item_follows_the_environment() {
        let home = Path::new("/home/u");
        let none = RuntimePaths::resolve(home, &|_| None);
        assert_eq!(none.claude_keychain_service, "Claude Code-credentials");
        assert_eq!(none.claude_keychain_account, "claude-code-user");

        // Pinned independently: python3 -c 'import hashlib; print(hashlib.sha256(b"/c").hexdigest())'
        let env = |name: &str| match name {
            "CLAUDE_CONFIG_DIR" => Some("/c".to_string()),
            "USER" => Some("ada".to_string()),
            _ => None,
        };
        let set = RuntimePaths::resolve(home, &env);
        assert_eq!(
            set.claude_keychain_service,
            "Claude Code-credentials-facd442e"
        );
        assert_eq!(set.claude_keychain_account, "ada");

        let secure = |name: &str| match name {
            "CLAUDE_SECURESTORAGE_CONFIG_DIR" => Some("/s".to_string()),
            "CLAUDE_CONFIG_DIR" => Some("/c".to_string()),
            "USER" => Some("a b".to_string()),
            _ => None,
        };
        let s = RuntimePaths::resolve(home, &secure);
        assert_eq!(
            s.claude_keychain_service,
            "Claude Code-credentials-8e295f31"
        );
        assert_eq!(s.claude_keychain_account, "claude-code-user");

        let empty_secure = |name: &str| match name {
            "CLAUDE_SECURESTORAGE_CONFIG_DIR" => Some(String::new()),
            "CLAUDE_CONFIG_DIR" => Some("/c".to_string()),
            "LOGNAME" => Some("bo".to_string()),
            _ => None,
        };
        let e = RuntimePaths::resolve(home, &empty_secure);
        assert_eq!(e.claude_keychain_service, "Claude Code-credentials");
        assert_eq!(e.claude_keychain_account, "bo");
    }
}

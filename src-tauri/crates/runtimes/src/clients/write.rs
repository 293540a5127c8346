//! Writing a Patchbay entry into a client's MCP config: "Add to Claude Code / Codex / Gemini CLI
//! / Cursor / VS Code / Claude Desktop / Windsurf", and switching an `npx mcp-remote URL` entry
//! over to Patchbay.
//!
//! An entry points either at `patchbay connect NAME` (stdio: the client launches Patchbay, which
//! bridges to the connector with the vault's credential) or at the gateway (`url` plus the
//! client's secret header, both given by the caller). Each client gets the shape its own docs
//! describe ([`entry_json`]).
//!
//! Rules:
//! - Only the one entry changes. The file is edited as text ([`edit`]): every other key, and the
//!   comments and trailing commas of a JSONC file (VS Code's `mcp.json`), stay byte for byte.
//!   The result is parsed again and compared before anything is written.
//! - Written atomically under our lock with [`crate::atomic::update_text_file`] (temp file in the
//!   same directory, fsync, rename, the file's own mode kept; a new file is 0600). Claude Code's
//!   `~/.claude.json` also under Claude Code's own write lock ([`crate::claude_lock`]). Codex's
//!   `config.toml` is edited with `toml_edit` (comments, order and unknown keys kept).
//! - Backup: before the first change Patchbay makes to an existing file, its content is copied to
//!   `<file>.patchbay-backup` (0600: client configs hold literal API keys). It is never
//!   overwritten: a backup that exists is the file as it was before Patchbay first touched it.
//!   A file Patchbay creates has nothing to back up.
//! - An entry of the same name that is not Patchbay's is never overwritten unless the caller
//!   asks ([`Conflict::Replace`]); the error names it. Patchbay's own entry (see
//!   [`patchbay_target`]) is updated in place.

mod edit;

use super::{formats, Client, ClientScope, ClientServer, ClientTransport, ConfigFile};
use crate::atomic::{lock_path_for, update_text_file, FileMode, UpdateOptions};
use crate::RuntimeError;
use patchbay_vault::Secret;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long to wait for another Patchbay writer of the same file.
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the client's entry sends it.
#[derive(Clone, PartialEq, Eq)]
pub enum Target {
    /// `COMMAND [GLOBAL_ARGS] connect NAME`: `command` is the patchbay binary (an absolute path,
    /// or `patchbay` when that is on PATH); `global_args` what it needs to find the same files
    /// (`--data-dir DIR` when Patchbay runs on another data directory than the default).
    Connect {
        command: String,
        global_args: Vec<String>,
        connector: String,
    },
    /// The gateway's `/mcp/NAME` (or aggregate) URL with the client's secret header(s).
    Gateway {
        url: String,
        /// In the order written.
        headers: Vec<(String, Secret)>,
    },
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Connect {
                command,
                global_args,
                connector,
            } => f
                .debug_struct("Connect")
                .field("command", command)
                .field("global_args", global_args)
                .field("connector", connector)
                .finish(),
            Target::Gateway { url, headers } => f
                .debug_struct("Gateway")
                .field("url", url)
                .field("headers", headers)
                .finish(),
        }
    }
}

/// What to do with an existing entry of the same name that is not Patchbay's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    Refuse,
    Replace,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub client: Client,
    pub file: PathBuf,
    pub name: String,
    pub change: Change,
    /// The backup made by this write (`None`: one existed already, or the file is new).
    pub backup: Option<PathBuf>,
    /// What puts the file back as it was just before this write ([`undo`]); `None` when
    /// nothing was written.
    pub undo: Option<Undo>,
}

/// The file as it was before one write and as that write left it: what [`undo`] needs. Both
/// texts are [`Secret`]s (client configs hold literal API keys), so Debug shows neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undo {
    pub client: Client,
    pub file: PathBuf,
    /// `None`: the write created the file.
    before: Option<Secret>,
    after: Secret,
}

/// What a write would do, for a confirmation before it: the entry as the file holds it now and
/// as it would be, each in the file's own syntax, with every header and environment value,
/// credential argument and URL query hidden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryPreview {
    pub client: Client,
    pub file: PathBuf,
    pub name: String,
    /// `None`: the file has no entry of that name (or no file yet).
    pub before: Option<String>,
    pub after: String,
    /// What the write would do to the entry.
    pub change: Change,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A new entry.
    Added,
    /// An entry of that name was there and now points at Patchbay.
    Replaced,
    /// The entry was already exactly this; nothing was written.
    Unchanged,
}

/// Why a write was refused.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error("{file}: {client} already has a server named \"{name}\" that is not Patchbay's ({existing}); nothing was changed (`--replace`, or Replace in the window, points it at Patchbay)", client = .client.display_name(), file = .file.display())]
    Conflict {
        client: Client,
        file: PathBuf,
        name: String,
        /// What it is, without secrets: `stdio: npx -y pkg`, `http: https://...`.
        existing: String,
    },
    #[error("{client} cannot use {what}", client = .client.display_name())]
    Unsupported { client: Client, what: String },
    #[error("{file}: {client} has no server named \"{name}\"", client = .client.display_name(), file = .file.display())]
    NoEntry {
        client: Client,
        file: PathBuf,
        name: String,
    },
    #[error("{file}: \"{name}\" does not run mcp-remote ({existing}); nothing was changed", file = .file.display())]
    NotMcpRemote {
        file: PathBuf,
        name: String,
        existing: String,
    },
    /// Undo found the file changed since Patchbay wrote it: restoring it would throw that away.
    #[error("{file} has changed since Patchbay wrote it ({client} or another program wrote it again); nothing was undone", client = .client.display_name(), file = .file.display())]
    ChangedSince { client: Client, file: PathBuf },
}

/// The client's user config file (the one Add writes), with its path from `paths`.
pub fn user_file(paths: &super::ClientPaths, client: Client) -> Result<PathBuf, WriteError> {
    Ok(match client {
        Client::ClaudeCode => paths.claude_json.clone(),
        Client::Codex => paths.codex_config.clone(),
        Client::GeminiCli => paths.gemini_user.clone(),
        Client::Cursor => paths.cursor_user.clone(),
        Client::VsCode => paths.vscode_user.clone(),
        Client::ClaudeDesktop => paths.claude_desktop_config.clone(),
        Client::Windsurf => paths.windsurf.clone(),
    })
}

/// What a stdio entry passes through from a client that strips the environment (Codex): the
/// session bus the keychain is reached over, where `patchbay connect` finds it first.
const CODEX_ENV_VARS: [&str; 2] = ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"];

/// The key of the servers map in the client's file (Codex: the `mcp_servers` table).
fn section(client: Client) -> &'static str {
    match client {
        Client::VsCode => "servers",
        Client::Codex => "mcp_servers",
        _ => "mcpServers",
    }
}

/// The entry for `target`, in `client`'s own format:
/// - Cursor (cursor.com/docs/mcp; shared/reference/mcp-clients.md): stdio `command`, `args`;
///   remote `url` + `headers` (`type` optional; streamable HTTP, falling back to SSE).
/// - VS Code (code.visualstudio.com/docs/copilot/reference/mcp-configuration): `type` `stdio`
///   with `command`, `args`; `type` `http` with `url`, `headers`.
/// - Claude Desktop (modelcontextprotocol.io quickstart "For Claude Desktop Users";
///   support.claude.com/en/articles/11175166): stdio only, `command`, `args`. Remote servers
///   are added as connectors in its settings and connect from Anthropic's cloud, which cannot
///   reach a loopback gateway: refused.
/// - Windsurf (docs.windsurf.com/windsurf/cascade/mcp): stdio `command`, `args`; remote
///   `serverUrl` + `headers`.
/// - Claude Code (code.claude.com/docs/en/mcp, user scope: top-level `mcpServers` of
///   `~/.claude.json`): `type` `stdio` with `command`, `args`, `env`; `type` `http` with `url`,
///   `headers` (what `claude mcp add-json --scope user` writes).
/// - Gemini CLI (`~/.gemini/settings.json`): stdio `command`, `args`; remote `type` `http` with
///   `url`, `headers` (0.61 calls `httpUrl` deprecated).
/// - Codex (`[mcp_servers.NAME]` of `config.toml`): stdio `command`, `args` and `env_vars` (the
///   session bus: Codex passes only a few variables); remote `url` + `http_headers`.
pub fn entry_json(client: Client, target: &Target) -> Result<Value, WriteError> {
    match target {
        Target::Connect {
            command,
            global_args,
            connector,
        } => {
            let mut args: Vec<&str> = global_args.iter().map(String::as_str).collect();
            args.extend(["connect", connector.as_str()]);
            Ok(match client {
                Client::VsCode => json!({ "type": "stdio", "command": command, "args": args }),
                Client::ClaudeCode => {
                    json!({ "type": "stdio", "command": command, "args": args, "env": {} })
                }
                Client::Codex => {
                    json!({ "command": command, "args": args, "env_vars": CODEX_ENV_VARS })
                }
                Client::Cursor | Client::ClaudeDesktop | Client::Windsurf | Client::GeminiCli => {
                    json!({ "command": command, "args": args })
                }
            })
        }
        Target::Gateway { url, headers } => {
            let headers: Map<String, Value> = headers
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.expose().to_string())))
                .collect();
            Ok(match client {
                Client::Cursor => json!({ "url": url, "headers": headers }),
                Client::VsCode | Client::ClaudeCode | Client::GeminiCli => {
                    json!({ "type": "http", "url": url, "headers": headers })
                }
                Client::Codex => json!({ "url": url, "http_headers": headers }),
                Client::Windsurf => json!({ "serverUrl": url, "headers": headers }),
                Client::ClaudeDesktop => {
                    return Err(WriteError::Unsupported {
                        client,
                        what: "the gateway: its config launches commands only (use stdio, `patchbay connect`)".into(),
                    })
                }
            })
        }
    }
}

/// Which Patchbay connector an entry points at, when it is Patchbay's: a stdio entry running
/// `patchbay [--data-dir D] [--catalog C] connect NAME [ignored...]` (any path to a `patchbay`
/// binary), or a remote entry on the gateway's loopback `/mcp/NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchbayTarget {
    Connect(String),
    Gateway(String),
}

impl PatchbayTarget {
    pub fn connector(&self) -> &str {
        match self {
            PatchbayTarget::Connect(name) | PatchbayTarget::Gateway(name) => name,
        }
    }
}

/// See [`PatchbayTarget`].
pub fn patchbay_target(server: &ClientServer) -> Option<PatchbayTarget> {
    match &server.transport {
        ClientTransport::Stdio { command, args, .. } => {
            if super::command_basename(command) != "patchbay" {
                return None;
            }
            connect_target(args).map(PatchbayTarget::Connect)
        }
        ClientTransport::Sse { url, .. } | ClientTransport::StreamableHttp { url, .. } => {
            gateway_connector(url).map(PatchbayTarget::Gateway)
        }
    }
}

/// `NAME` of `patchbay`'s arguments `[--data-dir D] [--catalog C] connect NAME [...]` (each global
/// option also as `--opt=V`); what follows NAME is mcp-remote's options, which connect ignores.
fn connect_target(args: &[String]) -> Option<String> {
    const GLOBAL_WITH_VALUE: [&str; 2] = ["--data-dir", "--catalog"];
    let mut rest = args.iter();
    loop {
        let arg = rest.next()?;
        if arg == "connect" {
            let name = rest.next()?;
            return (!name.starts_with('-') && !name.is_empty()).then(|| name.clone());
        }
        if GLOBAL_WITH_VALUE.contains(&arg.as_str()) {
            rest.next()?;
        } else if !GLOBAL_WITH_VALUE
            .iter()
            .any(|flag| arg.starts_with(&format!("{flag}=")))
        {
            return None;
        }
    }
}

/// `NAME` of a gateway URL `http://127.0.0.1:PORT/mcp/NAME` (or `localhost`, `[::1]`), on any
/// port: "Add to" writes whichever port it was given. The shape is the one rule of
/// [`patchbay_catalog::own_gateway`].
fn gateway_connector(url: &str) -> Option<String> {
    match patchbay_catalog::own_gateway::gateway_url(url)?.endpoint {
        patchbay_catalog::own_gateway::GatewayEndpoint::Connector(name) => Some(name),
        patchbay_catalog::own_gateway::GatewayEndpoint::Aggregate => None,
    }
}

/// The secrets Patchbay's gateway entries in `file` already send (`Authorization: Bearer X` or
/// `X-Patchbay-Client: X`), in file order, each once: "Add to" another connector reuses the
/// client's gateway secret instead of minting one per entry. A missing file has none.
pub fn gateway_secrets(client: Client, file: &Path) -> Result<Vec<Secret>, WriteError> {
    let mut found: Vec<Secret> = Vec::new();
    for server in formats::read_file(&config_file(client, file))? {
        if !matches!(patchbay_target(&server), Some(PatchbayTarget::Gateway(_))) {
            continue;
        }
        let (ClientTransport::Sse { headers, .. }
        | ClientTransport::StreamableHttp { headers, .. }) = &server.transport
        else {
            continue;
        };
        for (name, value) in headers {
            let value = value.expose().trim();
            let secret = if name.eq_ignore_ascii_case("authorization") {
                value
                    .split_once(' ')
                    .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                    .map(|(_, token)| token.trim())
            } else if name.eq_ignore_ascii_case("x-patchbay-client") {
                Some(value)
            } else {
                None
            };
            if let Some(secret) = secret.filter(|s| !s.is_empty()) {
                if !found.iter().any(|f| f.expose() == secret) {
                    found.push(Secret::new(secret.to_string()));
                }
            }
        }
    }
    Ok(found)
}

/// A one-line description of an entry without secrets (for errors).
fn describe(server: &ClientServer) -> String {
    match &server.transport {
        ClientTransport::Stdio { command, args, .. } => {
            let args = super::redacted_args(args);
            format!("stdio: {command} {}", args.join(" "))
                .trim()
                .to_string()
        }
        other => format!("{}: {}", other.kind(), other.url().unwrap_or_default()),
    }
}

/// "Add to CLIENT": set the entry `name` in `file` (the client's config) to point at `target`.
pub fn add(
    client: Client,
    file: &Path,
    name: &str,
    target: &Target,
    conflict: Conflict,
) -> Result<Written, WriteError> {
    let value = entry_json(client, target)?;
    write_entry(
        client,
        file,
        name,
        &value,
        &mut add_check(client, file, name, conflict),
    )
}

/// What [`add`] would do, written nowhere.
pub fn preview_add(
    client: Client,
    file: &Path,
    name: &str,
    target: &Target,
    conflict: Conflict,
) -> Result<EntryPreview, WriteError> {
    let value = entry_json(client, target)?;
    preview_entry(
        client,
        file,
        name,
        &value,
        &mut add_check(client, file, name, conflict),
    )
}

/// Add's rule for an entry of the same name: Patchbay's own is updated, another refused unless
/// `conflict` says replace.
fn add_check<'a>(
    client: Client,
    file: &'a Path,
    name: &'a str,
    conflict: Conflict,
) -> impl FnMut(Option<&Existing<'_>>) -> Result<(), WriteError> + 'a {
    move |existing| match existing {
        None => Ok(()),
        Some(Existing::Parsed(server)) if patchbay_target(server).is_some() => Ok(()),
        Some(_) if conflict == Conflict::Replace => Ok(()),
        Some(existing) => Err(WriteError::Conflict {
            client,
            file: file.to_path_buf(),
            name: name.to_string(),
            existing: existing.describe(),
        }),
    }
}

/// The URL an entry of `file` bridges through mcp-remote (`npx [-y] mcp-remote URL ...`), for the
/// caller to find the connector with that URL. Errors when there is no such entry or it does not
/// run mcp-remote.
pub fn mcp_remote_url(client: Client, file: &Path, name: &str) -> Result<String, WriteError> {
    let servers = formats::read_file(&config_file(client, file))?;
    let server = servers
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| WriteError::NoEntry {
            client,
            file: file.to_path_buf(),
            name: name.to_string(),
        })?;
    server
        .mcp_remote_options()
        .map(|o| o.server_url)
        .ok_or_else(|| WriteError::NotMcpRemote {
            file: file.to_path_buf(),
            name: name.to_string(),
            existing: describe(server),
        })
}

/// Switch the `npx mcp-remote URL` entry `name` over to `target`, keeping its name and the rest
/// of the file. The whole entry is replaced (mcp-remote's `env` and flags mean nothing to
/// Patchbay). Refused, with nothing written, when the entry is gone or no longer runs mcp-remote.
pub fn switch_mcp_remote(
    client: Client,
    file: &Path,
    name: &str,
    target: &Target,
) -> Result<Written, WriteError> {
    let value = entry_json(client, target)?;
    write_entry(
        client,
        file,
        name,
        &value,
        &mut switch_check(client, file, name),
    )
}

/// What [`switch_mcp_remote`] would do, written nowhere.
pub fn preview_switch(
    client: Client,
    file: &Path,
    name: &str,
    target: &Target,
) -> Result<EntryPreview, WriteError> {
    let value = entry_json(client, target)?;
    preview_entry(
        client,
        file,
        name,
        &value,
        &mut switch_check(client, file, name),
    )
}

/// Switch's rule: the entry must run mcp-remote (or be Patchbay's already: a second click).
fn switch_check<'a>(
    client: Client,
    file: &'a Path,
    name: &'a str,
) -> impl FnMut(Option<&Existing<'_>>) -> Result<(), WriteError> + 'a {
    move |existing| match existing {
        Some(Existing::Parsed(server)) if server.mcp_remote_options().is_some() => Ok(()),
        // Switched already (a second click): rewriting Patchbay's own entry is harmless.
        Some(Existing::Parsed(server)) if patchbay_target(server).is_some() => Ok(()),
        Some(existing) => Err(WriteError::NotMcpRemote {
            file: file.to_path_buf(),
            name: name.to_string(),
            existing: existing.describe(),
        }),
        None => Err(WriteError::NoEntry {
            client,
            file: file.to_path_buf(),
            name: name.to_string(),
        }),
    }
}

/// Puts the file back byte for byte as it was just before the write `undo` came from (removes
/// it when that write created it), provided it still holds exactly what the write left. When
/// it does not (the client, or a later write, changed it since), nothing is touched: restoring
/// would throw that change away.
pub fn undo(undo: &Undo) -> Result<(), WriteError> {
    let changed = || WriteError::ChangedSince {
        client: undo.client,
        file: undo.file.clone(),
    };
    let restored = match &undo.before {
        None => crate::atomic::remove_file_holding(
            &undo.file,
            LOCK_TIMEOUT,
            undo.after.expose().as_bytes(),
        )?,
        Some(before) => {
            let options = UpdateOptions {
                create_if_missing: false,
                ..update_options(undo.client, &undo.file)
            };
            update_text_file(&undo.file, &options, &mut |text| {
                Ok((text == Some(undo.after.expose())).then(|| before.expose().to_owned()))
            })?
        }
    };
    if restored {
        Ok(())
    } else {
        Err(changed())
    }
}

/// The secret-free rendering of what writing `value` as `name` would change ([`EntryPreview`]),
/// with `check` refusing as the write would.
fn preview_entry(
    client: Client,
    file: &Path,
    name: &str,
    value: &Value,
    check: &mut Check<'_>,
) -> Result<EntryPreview, WriteError> {
    let text = crate::atomic::read_text_bounded(file)?;
    let (raw, servers) = match &text {
        None => (None, Vec::new()),
        Some(text) => {
            let servers = formats::parse(&config_file(client, file), text)?;
            let raw = if client == Client::Codex {
                let table = crate::toml_text::parse_table(text).map_err(|e| malformed(file, e))?;
                table
                    .get("mcp_servers")
                    .and_then(|s| s.get(name))
                    .and_then(|entry| serde_json::to_value(entry).ok())
            } else {
                parse_lenient(file, text)?
                    .get(section(client))
                    .and_then(Value::as_object)
                    .and_then(|s| s.get(name))
                    .cloned()
            };
            (raw, servers)
        }
    };
    check(Existing::of(raw.is_some(), &servers, name).as_ref())?;
    let change = match &raw {
        None => Change::Added,
        Some(raw) if raw == value => Change::Unchanged,
        Some(_) => Change::Replaced,
    };
    Ok(EntryPreview {
        client,
        file: file.to_path_buf(),
        name: name.to_owned(),
        before: raw.map(|raw| render_entry(client, name, &hide_secrets(&raw))),
        after: render_entry(client, name, &hide_secrets(value)),
        change,
    })
}

/// `entry` with every value of its `env`, `headers` and `http_headers` maps, every credential
/// argument ([`super::redacted_args`]), every string under a credential-like key and every URL
/// query replaced by [`super::REDACTED`]: a preview shows names, never values.
fn hide_secrets(entry: &Value) -> Value {
    let Value::Object(map) = entry else {
        return entry.clone();
    };
    let hidden = || Value::String(super::REDACTED.to_owned());
    let shown = map.iter().map(|(key, value)| {
        let value = match (key.as_str(), value) {
            ("env" | "headers" | "http_headers", Value::Object(values)) => Value::Object(
                values
                    .iter()
                    .map(|(k, v)| (k.clone(), if v.is_string() { hidden() } else { v.clone() }))
                    .collect(),
            ),
            ("args", Value::Array(items)) if items.iter().all(Value::is_string) => {
                let args: Vec<String> = items
                    .iter()
                    .filter_map(|a| a.as_str().map(str::to_owned))
                    .collect();
                super::redacted_args(&args)
                    .into_iter()
                    .map(Value::String)
                    .collect()
            }
            (_, Value::String(_)) if super::is_credential_name(key) => hidden(),
            ("url" | "serverUrl" | "httpUrl", Value::String(url)) => {
                Value::String(match url.split_once('?') {
                    Some((base, _)) => format!("{base}?{}", super::REDACTED),
                    None => url.clone(),
                })
            }
            (_, other) => other.clone(),
        };
        (key.clone(), value)
    });
    Value::Object(shown.collect())
}

/// `"name": {…}` for a JSON client, `[mcp_servers.name]` and its keys for Codex.
fn render_entry(client: Client, name: &str, entry: &Value) -> String {
    if client == Client::Codex {
        let doc = json!({ "mcp_servers": { name: entry } });
        if let Ok(text) = toml::to_string(&doc) {
            return text.trim_end().to_owned();
        }
    }
    let mut one = Map::new();
    one.insert(name.to_owned(), entry.clone());
    let pretty = serde_json::to_string_pretty(&Value::Object(one)).unwrap_or_default();
    // The member without the braces around it, as it sits in the servers map.
    let lines: Vec<&str> = pretty.lines().collect();
    let inner = lines
        .get(1..lines.len().saturating_sub(1))
        .unwrap_or_default();
    inner
        .iter()
        .map(|line| line.strip_prefix("  ").unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The entry already in the file under the name being written.
enum Existing<'a> {
    Parsed(&'a ClientServer),
    /// An entry the reader skips (an unknown `type`).
    Other,
}

impl<'a> Existing<'a> {
    /// The user-scope entry `name` when the file has one (`present`), as the reader read it
    /// from `servers` (a project-local entry of Claude Code's of that name is another entry).
    fn of(present: bool, servers: &'a [ClientServer], name: &str) -> Option<Existing<'a>> {
        present.then(|| {
            servers
                .iter()
                .find(|s| s.name == name && s.scope == ClientScope::User)
                .map_or(Existing::Other, Existing::Parsed)
        })
    }
}

impl Existing<'_> {
    fn describe(&self) -> String {
        match self {
            Existing::Parsed(server) => describe(server),
            Existing::Other => "an entry of a type Patchbay does not read".into(),
        }
    }
}

type Check<'a> = dyn FnMut(Option<&Existing<'_>>) -> Result<(), WriteError> + 'a;

fn config_file(client: Client, file: &Path) -> ConfigFile {
    ConfigFile {
        client,
        scope: ClientScope::User,
        path: file.to_path_buf(),
    }
}

/// The path of `file`'s backup.
pub fn backup_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".patchbay-backup");
    file.with_file_name(name)
}

fn write_entry(
    client: Client,
    file: &Path,
    name: &str,
    value: &Value,
    check: &mut Check<'_>,
) -> Result<Written, WriteError> {
    if client == Client::Codex {
        return write_codex_entry(file, name, value, check);
    }
    let section = section(client);
    let options = update_options(client, file);
    let mut outcome = EditOutcome::new();
    let replaced = update_text_file(file, &options, &mut |text| {
        outcome.refused = None;
        outcome.texts = None;
        let Some(text) = text else {
            outcome.change = Change::Added;
            if let Err(e) = check(None) {
                outcome.refused = Some(e);
                return Ok(None);
            }
            let new_text =
                edit::set_member("", section, name, value).map_err(|m| malformed(file, m))?;
            outcome.texts = Some((None, new_text.clone()));
            return Ok(Some(new_text));
        };
        // Read it the way the client reads it (strict JSON for Claude Desktop, JSONC for the
        // others): a file the reader refuses is not edited.
        let servers = formats::parse(&config_file(client, file), text)?;
        let before = parse_lenient(file, text)?;
        let raw = before
            .get(section)
            .and_then(Value::as_object)
            .and_then(|s| s.get(name));
        let existing = Existing::of(raw.is_some(), &servers, name);
        if let Err(e) = check(existing.as_ref()) {
            outcome.refused = Some(e);
            return Ok(None);
        }
        if raw == Some(value) {
            outcome.change = Change::Unchanged;
            return Ok(None);
        }
        outcome.change = if raw.is_some() {
            Change::Replaced
        } else {
            Change::Added
        };
        let new_text =
            edit::set_member(text, section, name, value).map_err(|m| malformed(file, m))?;
        verify(file, &before, &new_text, section, name, value)?;
        if make_backup(client, file, text)? {
            outcome.backup = Some(backup_path(file));
        }
        outcome.texts = Some((Some(text.to_owned()), new_text.clone()));
        Ok(Some(new_text))
    })?;
    outcome.written(client, file, name, replaced)
}

/// What an edit found, kept outside `update_text_file`'s closure (which speaks only
/// RuntimeError), and the [`Written`] it makes.
struct EditOutcome {
    refused: Option<WriteError>,
    change: Change,
    backup: Option<PathBuf>,
    /// The file's text before and after the last edit handed to the writer (`None` before:
    /// no file).
    texts: Option<(Option<String>, String)>,
}

impl EditOutcome {
    fn new() -> EditOutcome {
        EditOutcome {
            refused: None,
            change: Change::Unchanged,
            backup: None,
            texts: None,
        }
    }

    /// `replaced`: whether the file was written at all.
    fn written(
        self,
        client: Client,
        file: &Path,
        name: &str,
        replaced: bool,
    ) -> Result<Written, WriteError> {
        if let Some(error) = self.refused {
            return Err(error);
        }
        Ok(Written {
            client,
            file: file.to_path_buf(),
            name: name.to_string(),
            change: if replaced {
                self.change
            } else {
                Change::Unchanged
            },
            backup: self.backup,
            undo: self.texts.filter(|_| replaced).map(|(before, after)| Undo {
                client,
                file: file.to_path_buf(),
                before: before.map(Secret::new),
                after: Secret::new(after),
            }),
        })
    }
}

/// Our lock, and Claude Code's own around its `~/.claude.json` (it rewrites that file often).
fn update_options(client: Client, file: &Path) -> UpdateOptions {
    UpdateOptions {
        lock_path: lock_path_for(file),
        lock_timeout: LOCK_TIMEOUT,
        runtime_lock: (client == Client::ClaudeCode)
            .then(|| crate::claude_lock::claude_config_lock_path(file)),
        create_if_missing: true,
        mode: FileMode::PreserveOrPrivate,
    }
}

/// [`write_entry`] for Codex's `config.toml`: `[mcp_servers.NAME]` set to `value` (a JSON object
/// of strings, string arrays and string maps) with `toml_edit`, the rest of the document as it
/// was; the result read back as Codex reads it must hold the entry and every other server as
/// before.
fn write_codex_entry(
    file: &Path,
    name: &str,
    value: &Value,
    check: &mut Check<'_>,
) -> Result<Written, WriteError> {
    let client = Client::Codex;
    let table = toml_table(value).map_err(|m| WriteError::Runtime(malformed(file, m)))?;
    let mut outcome = EditOutcome::new();
    let replaced = update_text_file(file, &update_options(client, file), &mut |text| {
        outcome.refused = None;
        outcome.texts = None;
        let original = text.unwrap_or("");
        let before = formats::parse(&config_file(client, file), original)?;
        let mut doc = crate::toml_text::parse_document(original).map_err(|e| malformed(file, e))?;
        let existing_raw = doc
            .get("mcp_servers")
            .and_then(|s| s.as_table_like())
            .and_then(|s| s.get(name))
            .map(|item| item.to_string());
        let existing = Existing::of(existing_raw.is_some(), &before, name);
        if let Err(e) = check(existing.as_ref()) {
            outcome.refused = Some(e);
            return Ok(None);
        }
        let servers = doc
            .entry("mcp_servers")
            .or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                t.set_implicit(true);
                toml_edit::Item::Table(t)
            })
            .as_table_like_mut()
            .ok_or_else(|| malformed(file, "mcp_servers is not a table".into()))?;
        let same = servers
            .get(name)
            .and_then(|item| item.as_table_like())
            .is_some_and(|t| toml_table_equals(t, &table));
        if same {
            outcome.change = Change::Unchanged;
            return Ok(None);
        }
        outcome.change = if existing_raw.is_some() {
            Change::Replaced
        } else {
            Change::Added
        };
        servers.insert(name, toml_edit::Item::Table(table.clone()));
        let new_text = doc.to_string();
        let after = formats::parse(&config_file(client, file), &new_text)?;
        let others = |list: &[ClientServer]| -> Vec<ClientServer> {
            list.iter().filter(|s| s.name != name).cloned().collect()
        };
        if others(&after) != others(&before) || !after.iter().any(|s| s.name == name) {
            return Err(malformed(
                file,
                "editing the file would change more than the one entry; nothing was written".into(),
            ));
        }
        if text.is_some() && make_backup(client, file, original)? {
            outcome.backup = Some(backup_path(file));
        }
        outcome.texts = Some((text.map(str::to_owned), new_text.clone()));
        Ok(Some(new_text))
    })?;
    outcome.written(client, file, name, replaced)
}

/// A TOML table from a JSON object of strings, string arrays and string maps (inline tables).
fn toml_table(value: &Value) -> Result<toml_edit::Table, String> {
    let object = value.as_object().ok_or("an entry must be an object")?;
    let mut table = toml_edit::Table::new();
    for (key, value) in object {
        let item = match value {
            Value::String(s) => toml_edit::value(s.as_str()),
            Value::Array(items) => {
                let mut array = toml_edit::Array::new();
                for item in items {
                    array.push(item.as_str().ok_or("array items must be strings")?);
                }
                toml_edit::value(array)
            }
            Value::Object(map) => {
                let mut inline = toml_edit::InlineTable::new();
                for (k, v) in map {
                    inline.insert(k, v.as_str().ok_or("map values must be strings")?.into());
                }
                toml_edit::value(inline)
            }
            _ => return Err(format!("{key}: only strings, arrays and maps are written")),
        };
        table.insert(key, item);
    }
    Ok(table)
}

/// Whether the existing table says what `wanted` says (formatting aside).
fn toml_table_equals(existing: &dyn toml_edit::TableLike, wanted: &toml_edit::Table) -> bool {
    let plain = |item: &toml_edit::Item| -> Option<toml::Value> {
        let text = match item {
            toml_edit::Item::Value(v) => format!("v = {}", v.clone().decorated("", "")),
            _ => return None,
        };
        text.parse::<toml::Table>().ok()?.remove("v")
    };
    existing.len() == wanted.len()
        && wanted.iter().all(|(key, item)| {
            existing
                .get(key)
                .is_some_and(|have| plain(have).is_some() && plain(have) == plain(item))
        })
}

fn parse_lenient(file: &Path, text: &str) -> Result<Map<String, Value>, RuntimeError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let cleaned = super::jsonc::blank_comments_and_trailing_commas(text);
    if cleaned.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str(&cleaned) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(malformed(file, "expected a JSON object at the top".into())),
        Err(e) => Err(malformed(file, format!("not valid JSON: {e}"))),
    }
}

/// The edited text must hold the new entry and be otherwise equal to what was read.
fn verify(
    file: &Path,
    before: &Map<String, Value>,
    new_text: &str,
    section: &str,
    name: &str,
    value: &Value,
) -> Result<(), RuntimeError> {
    let mut after = parse_lenient(file, new_text)?;
    let mut before = before.clone();
    let taken = after
        .get_mut(section)
        .and_then(Value::as_object_mut)
        .and_then(|s| s.shift_remove(name));
    if let Some(s) = before.get_mut(section).and_then(Value::as_object_mut) {
        s.shift_remove(name);
    }
    // A section that was missing or null before is an object holding only the new entry now.
    let section_was_empty = !before.get(section).is_some_and(Value::is_object);
    if section_was_empty {
        before.remove(section);
        if after
            .get(section)
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            after.remove(section);
        }
    }
    if taken.as_ref() != Some(value) || after != before {
        return Err(malformed(
            file,
            "editing the file would change more than the one entry; nothing was written".into(),
        ));
    }
    Ok(())
}

/// Copy `text` to the backup unless a whole one exists. Whether one was made. Written like the
/// config (a temp file, fsync, rename), so a kill leaves no half backup; one that is there but
/// does not read as the client's config (a kill of an older release cut it short) is replaced.
fn make_backup(client: Client, file: &Path, text: &str) -> Result<bool, RuntimeError> {
    let path = backup_path(file);
    match std::fs::read_to_string(&path) {
        Ok(existing) if formats::parse(&config_file(client, &path), &existing).is_ok() => {
            return Ok(false)
        }
        Ok(_) => tracing::warn!(
            "{} is not a whole copy of the file; it is written again",
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        // Not UTF-8 (a cut in a character): as broken as any other.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {}
        Err(e) => return Err(crate::atomic::io_error(&path, "cannot read the backup", e)),
    }
    // Under the config's lock: a temp backup a killed writer left is stale.
    crate::atomic::sweep_stale_temps(&path);
    let tmp = crate::atomic::write_temp(&path, text.as_bytes(), 0o600)?;
    if let Err(e) = std::fs::rename(&tmp, &path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(crate::atomic::io_error(&path, "cannot write the backup", e));
    }
    if let Some(dir) = path.parent() {
        // The rename itself made durable, as for the config.
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(true)
}

fn malformed(path: &Path, message: String) -> RuntimeError {
    RuntimeError::Malformed {
        path: path.to_path_buf(),
        message,
    }
}

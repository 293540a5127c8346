//! Writing a Patchbay entry into a client's MCP config: "Add to Cursor / VS Code / Claude
//! Desktop / Windsurf", and switching an `npx mcp-remote URL` entry over to Patchbay.
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
//!   same directory, fsync, rename, the file's own mode kept; a new file is 0600).
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
    /// `COMMAND connect NAME`: `command` is the patchbay binary (an absolute path, or `patchbay`
    /// when that is on PATH).
    Connect { command: String, connector: String },
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
            Target::Connect { command, connector } => f
                .debug_struct("Connect")
                .field("command", command)
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
    #[error("{file}: {client} already has a server named \"{name}\" that is not Patchbay's ({existing}); nothing was changed (replace it to point it at Patchbay)", client = .client.display_name(), file = .file.display())]
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
}

/// The client's user config file (the one Add writes), with its path from `paths`.
pub fn user_file(paths: &super::ClientPaths, client: Client) -> Result<PathBuf, WriteError> {
    match client {
        Client::Cursor => Ok(paths.cursor_user.clone()),
        Client::VsCode => Ok(paths.vscode_user.clone()),
        Client::ClaudeDesktop => Ok(paths.claude_desktop_config.clone()),
        Client::Windsurf => Ok(paths.windsurf.clone()),
        other => Err(WriteError::Unsupported {
            client: other,
            what: "this writer (Claude Code and Codex are added through `patchbay bridge add`)"
                .into(),
        }),
    }
}

/// The key of the servers map in the client's file.
fn section(client: Client) -> &'static str {
    match client {
        Client::VsCode => "servers",
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
pub fn entry_json(client: Client, target: &Target) -> Result<Value, WriteError> {
    match target {
        Target::Connect { command, connector } => {
            let args = json!(["connect", connector]);
            Ok(match client {
                Client::VsCode => json!({ "type": "stdio", "command": command, "args": args }),
                Client::Cursor | Client::ClaudeDesktop | Client::Windsurf => {
                    json!({ "command": command, "args": args })
                }
                other => return Err(unsupported_client(other)),
            })
        }
        Target::Gateway { url, headers } => {
            let headers: Map<String, Value> = headers
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.expose().to_string())))
                .collect();
            Ok(match client {
                Client::Cursor => json!({ "url": url, "headers": headers }),
                Client::VsCode => json!({ "type": "http", "url": url, "headers": headers }),
                Client::Windsurf => json!({ "serverUrl": url, "headers": headers }),
                Client::ClaudeDesktop => {
                    return Err(WriteError::Unsupported {
                        client,
                        what: "the gateway: its config launches commands only (use stdio, `patchbay connect`)".into(),
                    })
                }
                other => return Err(unsupported_client(other)),
            })
        }
    }
}

fn unsupported_client(client: Client) -> WriteError {
    WriteError::Unsupported {
        client,
        what: "this writer".into(),
    }
}

/// Which Patchbay connector an entry points at, when it is Patchbay's: a stdio entry running
/// `patchbay connect NAME` (any path to a `patchbay` binary), or a remote entry on the gateway's
/// loopback `/mcp/NAME`.
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
            match args.as_slice() {
                [connect, name] if connect == "connect" => {
                    Some(PatchbayTarget::Connect(name.clone()))
                }
                _ => None,
            }
        }
        ClientTransport::Sse { url, .. } | ClientTransport::StreamableHttp { url, .. } => {
            gateway_connector(url).map(PatchbayTarget::Gateway)
        }
    }
}

/// `NAME` of `http://127.0.0.1:PORT/mcp/NAME` (or `localhost`, `[::1]`).
fn gateway_connector(url: &str) -> Option<String> {
    let rest = url.trim().strip_prefix("http://")?;
    let (authority, path) = rest.split_once('/')?;
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
        _ => authority,
    };
    if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
        return None;
    }
    let name = path.strip_prefix("mcp/")?;
    let name = name.strip_suffix('/').unwrap_or(name);
    (!name.is_empty() && !name.contains(['/', '?', '#'])).then(|| name.to_string())
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
    write_entry(client, file, name, &value, &mut |existing| match existing {
        None => Ok(()),
        Some(Existing::Parsed(server)) if patchbay_target(server).is_some() => Ok(()),
        Some(_) if conflict == Conflict::Replace => Ok(()),
        Some(existing) => Err(WriteError::Conflict {
            client,
            file: file.to_path_buf(),
            name: name.to_string(),
            existing: existing.describe(),
        }),
    })
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
    write_entry(client, file, name, &value, &mut |existing| match existing {
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
    })
}

/// The entry already in the file under the name being written.
enum Existing<'a> {
    Parsed(&'a ClientServer),
    /// An entry the reader skips (an unknown `type`).
    Other,
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
    let section = section(client);
    let options = UpdateOptions {
        lock_path: lock_path_for(file),
        lock_timeout: LOCK_TIMEOUT,
        runtime_lock: None,
        create_if_missing: true,
        mode: FileMode::PreserveOrPrivate,
    };
    // What the closure found, kept outside it: update_text_file only speaks RuntimeError.
    let mut refused: Option<WriteError> = None;
    let mut change = Change::Unchanged;
    let mut backup: Option<PathBuf> = None;
    let replaced = update_text_file(file, &options, &mut |text| {
        refused = None;
        let Some(text) = text else {
            change = Change::Added;
            if let Err(e) = check(None) {
                refused = Some(e);
                return Ok(None);
            }
            return edit::set_member("", section, name, value)
                .map(Some)
                .map_err(|m| malformed(file, m));
        };
        // Read it the way the client reads it (strict JSON for Claude Desktop, JSONC for the
        // others): a file the reader refuses is not edited.
        let servers = formats::parse(&config_file(client, file), text)?;
        let before = parse_lenient(file, text)?;
        let raw = before
            .get(section)
            .and_then(Value::as_object)
            .and_then(|s| s.get(name));
        let existing = match (raw, servers.iter().find(|s| s.name == name)) {
            (None, _) => None,
            (Some(_), Some(server)) => Some(Existing::Parsed(server)),
            (Some(_), None) => Some(Existing::Other),
        };
        if let Err(e) = check(existing.as_ref()) {
            refused = Some(e);
            return Ok(None);
        }
        if raw == Some(value) {
            change = Change::Unchanged;
            return Ok(None);
        }
        change = if raw.is_some() {
            Change::Replaced
        } else {
            Change::Added
        };
        let new_text =
            edit::set_member(text, section, name, value).map_err(|m| malformed(file, m))?;
        verify(file, &before, &new_text, section, name, value)?;
        if make_backup(file, text)? {
            backup = Some(backup_path(file));
        }
        Ok(Some(new_text))
    })?;
    if let Some(error) = refused {
        return Err(error);
    }
    if !replaced {
        change = Change::Unchanged;
    }
    Ok(Written {
        client,
        file: file.to_path_buf(),
        name: name.to_string(),
        change,
        backup,
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

/// Copy `text` to the backup unless one exists. Whether one was made.
fn make_backup(file: &Path, text: &str) -> Result<bool, RuntimeError> {
    use std::io::Write;
    let path = backup_path(file);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut out = match options.open(&path) {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => {
            return Err(crate::atomic::io_error(
                &path,
                "cannot create the backup",
                e,
            ))
        }
    };
    let written = out.write_all(text.as_bytes()).and_then(|()| out.sync_all());
    if let Err(e) = written {
        // A half-written backup would never be replaced: remove it, write nothing.
        let _ = std::fs::remove_file(&path);
        return Err(crate::atomic::io_error(&path, "cannot write the backup", e));
    }
    Ok(true)
}

fn malformed(path: &Path, message: String) -> RuntimeError {
    RuntimeError::Malformed {
        path: path.to_path_buf(),
        message,
    }
}

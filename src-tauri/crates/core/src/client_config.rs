//! "Add to Claude Code / Codex / Gemini CLI / Cursor / VS Code / Claude Desktop / Windsurf" and
//! "Switch to Patchbay" (an
//! `npx mcp-remote URL` entry rewritten to go through Patchbay), for the CLI and the window.
//!
//! A connector in use is written into the client's user config pointing either at
//! `patchbay connect NAME` (stdio) or at the gateway's `/mcp/NAME` with the client's secret
//! header (the caller gets URL and header from the gateway's client registry: this crate does
//! not depend on the gateway). The file handling (each client's format, atomic write, backup,
//! refusing a foreign entry of the same name) is
//! [`patchbay_runtimes::clients::write`].

use std::path::{Path, PathBuf};

use patchbay_catalog::{expand, Transport};
use patchbay_runtimes::clients::write::{self, Target, WriteError};
use patchbay_runtimes::clients::ClientPaths;
// What callers without a dependency on patchbay-runtimes (the app) name in these functions.
pub use patchbay_runtimes::clients::write::{
    gateway_secrets, Change, Conflict, EntryPreview, Undo, Written,
};
pub use patchbay_runtimes::clients::Client;
use patchbay_status::{ConnectorStatus, Origin};
use patchbay_vault::Secret;

use crate::{CoreError, Patchbay};

/// The clients these writers serve, by the ids the CLI and the window use.
pub const CLIENTS: [(&str, Client); 7] = [
    ("cursor", Client::Cursor),
    ("vscode", Client::VsCode),
    ("claude-desktop", Client::ClaudeDesktop),
    ("windsurf", Client::Windsurf),
    ("claude-code", Client::ClaudeCode),
    ("codex", Client::Codex),
    ("gemini", Client::GeminiCli),
];

/// A client from its id: `claude-code`, `codex`, `gemini`, `cursor`, `vscode`, `claude-desktop`,
/// `windsurf` (`claude`, `gemini-cli`, `vs-code`, `vs_code`, `claude_desktop` too, any case).
pub fn parse_client(id: &str) -> Result<Client, CoreError> {
    let wanted = id.trim().to_ascii_lowercase().replace('_', "-");
    let wanted = match wanted.as_str() {
        "vs-code" | "code" => "vscode",
        "claude" => "claude-code",
        "gemini-cli" => "gemini",
        other => other,
    };
    CLIENTS
        .iter()
        .find(|(name, _)| *name == wanted)
        .map(|(_, client)| *client)
        .ok_or_else(|| {
            CoreError::InvalidInput(format!(
                "unknown client {id:?}; expected one of {}",
                CLIENTS.map(|(n, _)| n).join(", ")
            ))
        })
}

/// How the client reaches the connector.
#[derive(Clone)]
pub enum Route {
    /// The client launches `COMMAND [GLOBAL_ARGS] connect NAME` ([`connect_command`] finds
    /// COMMAND; [`crate::Paths::launch_args`] gives GLOBAL_ARGS).
    Connect {
        command: String,
        global_args: Vec<String>,
    },
    /// The gateway: this connector's URL on it and the client's secret header(s).
    Gateway {
        url: String,
        headers: Vec<(String, Secret)>,
    },
}

impl Route {
    /// The gateway at `url` with the client's minted `secret` as `Authorization: Bearer …`.
    pub fn gateway(url: String, secret: &Secret) -> Route {
        let bearer = Secret::new(format!("Bearer {}", secret.expose()));
        Route::Gateway {
            url,
            headers: vec![("Authorization".into(), bearer)],
        }
    }

    /// `patchbay connect` from this process, for `patchbay` running on `patchbay`'s files.
    pub fn connect(patchbay: &Patchbay) -> Route {
        Route::Connect {
            command: current_connect_command(),
            global_args: patchbay.paths.launch_args(),
        }
    }

    /// What is wrong with the entry this route writes ([`connect_warning`]), if anything.
    pub fn warning(&self) -> Option<&'static str> {
        match self {
            Route::Connect { command, .. } => connect_warning(command),
            Route::Gateway { .. } => None,
        }
    }

    fn target(self, connector: &str) -> Target {
        match self {
            Route::Connect {
                command,
                global_args,
            } => Target::Connect {
                command,
                global_args,
                connector: connector.to_owned(),
            },
            Route::Gateway { url, headers } => Target::Gateway { url, headers },
        }
    }
}

/// What a write with a bare `patchbay` says ([`connect_warning`]).
pub const NOT_INSTALLED: &str = "Patchbay's command-line tool is not installed where clients can \
launch it, so the entry runs `patchbay` from the client's PATH. Install it (the package, or \
`cargo install --path src-tauri/crates/cli`) and add the connector to the client again.";

/// The environment variable that names the command outright (a development checkout, a test):
/// written as given, with no warning.
pub const CONNECT_COMMAND_ENV: &str = "PATCHBAY_CONNECT_COMMAND";

/// The command a client should launch for `patchbay connect`: an absolute path, because a
/// client started from the desktop does not get the shell's PATH (Claude Desktop on macOS fails
/// with `spawn uv ENOENT` for a bare command that works in a terminal:
/// modelcontextprotocol/python-sdk#478), and never one inside a cargo build tree (`cargo
/// clean` or the next build breaks the client: issue 21).
/// - The running binary `exe` when it is `patchbay`, else the `patchbay` beside it (the app).
///   When the `patchbay` found on `path_var` is that binary, its PATH entry instead (e.g.
///   `/opt/homebrew/bin/patchbay`, `~/.cargo/bin/patchbay`: a link that survives upgrades).
/// - That binary inside a build tree, or none: the first `patchbay` on `path_var` outside one.
/// - None of these: bare `patchbay` ([`connect_warning`] says what to install).
pub fn connect_command(exe: &Path, path_var: Option<&std::ffi::OsStr>) -> String {
    let is_patchbay = exe.file_name().is_some_and(|n| n == binary_name());
    let binary = if is_patchbay {
        Some(exe.to_path_buf())
    } else {
        exe.parent()
            .map(|dir| dir.join(binary_name()))
            .filter(|sibling| sibling.is_file())
    };
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let on_path: Vec<PathBuf> = path_var
        .map(|p| {
            std::env::split_paths(p)
                .filter(|dir| dir.is_absolute())
                .map(|dir| dir.join(binary_name()))
                .filter(|candidate| candidate.is_file())
                .collect()
        })
        .unwrap_or_default();
    let chosen = match binary.filter(|b| !in_build_tree(b)) {
        Some(binary) => match on_path.first() {
            Some(found) if same(found, &binary) => Some(found.clone()),
            _ => Some(binary),
        },
        None => on_path.into_iter().find(|found| !in_build_tree(found)),
    };
    match chosen {
        Some(path) => path.to_string_lossy().into_owned(),
        None => BARE_COMMAND.into(),
    }
}

/// The command an entry names when no installed `patchbay` was found: the client finds it only
/// if it is on the PATH the client gets.
const BARE_COMMAND: &str = "patchbay";

/// [`NOT_INSTALLED`] for the bare command [`connect_command`] falls back to; `None` for an
/// absolute path.
pub fn connect_warning(command: &str) -> Option<&'static str> {
    (command == BARE_COMMAND).then_some(NOT_INSTALLED)
}

/// Whether `binary` sits in a cargo build tree: a directory above it holds cargo's
/// `CACHEDIR.TAG` (every target directory has one), through links too.
pub fn in_build_tree(binary: &Path) -> bool {
    let real = binary
        .canonicalize()
        .unwrap_or_else(|_| binary.to_path_buf());
    [binary, real.as_path()].iter().any(|path| {
        path.ancestors().skip(1).any(|dir| {
            std::fs::read_to_string(dir.join("CACHEDIR.TAG")).is_ok_and(|tag| tag.contains("cargo"))
        })
    })
}

fn binary_name() -> &'static str {
    if cfg!(windows) {
        "patchbay.exe"
    } else {
        "patchbay"
    }
}

/// [`connect_command`] for the running process; [`CONNECT_COMMAND_ENV`] names it outright.
pub fn current_connect_command() -> String {
    if let Some(command) = std::env::var_os(CONNECT_COMMAND_ENV).filter(|c| !c.is_empty()) {
        return command.to_string_lossy().into_owned();
    }
    match std::env::current_exe() {
        Ok(exe) => connect_command(&exe, std::env::var_os("PATH").as_deref()),
        Err(_) => BARE_COMMAND.into(),
    }
}

fn client_paths(patchbay: &Patchbay) -> Result<ClientPaths, CoreError> {
    match patchbay.client_setup() {
        Some(setup) => Ok(setup.paths.clone()),
        None => ClientPaths::from_env().ok_or(CoreError::NoHome),
    }
}

fn write_error(error: WriteError) -> CoreError {
    CoreError::ClientConfig(error)
}

/// The client's user config file that Add and Switch write.
pub fn client_file(patchbay: &Patchbay, client: Client) -> Result<PathBuf, CoreError> {
    write::user_file(&client_paths(patchbay)?, client).map_err(write_error)
}

/// "Add to CLIENT": point `client`'s entry `name` at the connector `name` in use, through
/// `route`. A remote connector only (`patchbay connect` and the gateway front remote servers).
pub fn add_to_client(
    patchbay: &Patchbay,
    client: Client,
    name: &str,
    route: Route,
    conflict: Conflict,
) -> Result<Written, CoreError> {
    let (file, _) = addable_file(patchbay, client, name)?;
    write::add(client, &file, name, &route.target(name), conflict).map_err(write_error)
}

/// What a write would do, for the confirmation before it: the entry before and after, and what
/// the user should know first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritePlan {
    /// The connector the entry would reach.
    pub connector: String,
    pub entry: EntryPreview,
    /// The connector is not ready in Patchbay ([`not_ready_warning`]); no installed `patchbay`
    /// for the entry to run ([`connect_warning`]).
    pub warnings: Vec<String>,
}

impl WritePlan {
    fn new(
        connector: String,
        entry: EntryPreview,
        not_ready: Option<String>,
        route: &Route,
    ) -> WritePlan {
        let warnings = not_ready
            .into_iter()
            .chain(route.warning().map(str::to_owned))
            .collect();
        WritePlan {
            connector,
            entry,
            warnings,
        }
    }
}

/// What `client` will meet when its entry reaches the connector `row` before Patchbay can
/// serve it (a state that blocks a start: [`ConnectorStatus::blocks_start`]); `None` when it
/// can start.
pub fn not_ready_warning(row: &ConnectorStatus, client: Client) -> Option<String> {
    let title = if row.title.is_empty() {
        &row.name
    } else {
        &row.title
    };
    row.blocks_start.then(|| {
        format!(
            "{title} is not ready in Patchbay yet ({}): {} will see it fail until it is.",
            row.label.to_lowercase(),
            client.display_name()
        )
    })
}

/// What [`add_to_client`] would change in the client's file, for a confirmation; nothing is
/// written.
pub fn preview_add_to_client(
    patchbay: &Patchbay,
    client: Client,
    name: &str,
    route: Route,
    conflict: Conflict,
) -> Result<WritePlan, CoreError> {
    let (file, not_ready) = addable_file(patchbay, client, name)?;
    let entry = write::preview_add(client, &file, name, &route.clone().target(name), conflict)
        .map_err(write_error)?;
    Ok(WritePlan::new(name.to_owned(), entry, not_ready, &route))
}

/// Puts a client's file back as it was before the write `undo` came from
/// ([`write::undo`]: refused when the file changed since).
pub fn undo_write(undo: &Undo) -> Result<(), CoreError> {
    write::undo(undo).map_err(write_error)
}

/// The client's file, when `name` is a remote connector in use that Add can write, and
/// [`not_ready_warning`] for it.
fn addable_file(
    patchbay: &Patchbay,
    client: Client,
    name: &str,
) -> Result<(PathBuf, Option<String>), CoreError> {
    let file = client_file(patchbay, client)?;
    let report = patchbay.status();
    let Some(row) = report.connector(name) else {
        let catalog = patchbay.catalog();
        return Err(match catalog.get(name) {
            Some(_) => CoreError::UnknownConnector {
                name: name.to_owned(),
                looked_in: format!("in use; `patchbay enable {name}` puts it in use"),
            },
            None => CoreError::unknown_connector(&catalog, name, "in use"),
        });
    };
    if row.transport == "stdio" {
        return Err(CoreError::Refused {
            connector: name.to_owned(),
            why: format!("{name} is a local (stdio) server; Patchbay fronts remote servers only"),
        });
    }
    Ok((file, not_ready_warning(row, client)))
}

/// A client "Add to" writes, as the window offers it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ClientTarget {
    /// The client's id (`cursor`, `vscode`, `claude-desktop`, `windsurf`, `gemini`).
    pub client: &'static str,
    pub display_name: &'static str,
    /// The directory of its user config exists: the client is (or was) on this machine.
    pub found: bool,
    /// It can reach the gateway over HTTP; Claude Desktop's config only launches commands.
    pub http: bool,
    /// The file Add writes.
    pub file: PathBuf,
}

/// The clients Add writes, each with whether it is on this machine (the window offers "Add to
/// CLIENT" only for those).
pub fn client_targets(patchbay: &Patchbay) -> Result<Vec<ClientTarget>, CoreError> {
    Ok(targets_in(&client_paths(patchbay)?))
}

fn targets_in(paths: &ClientPaths) -> Vec<ClientTarget> {
    CLIENTS
        .iter()
        // The window's rows already offer "Add to Claude Code / Codex" (the runtime bridge: the
        // runtime holds the token Patchbay refreshes); a second button of the same name for the
        // front door would leave the user guessing. The CLI's add-to reaches both ways.
        .filter(|(_, client)| !matches!(client, Client::ClaudeCode | Client::Codex))
        .filter_map(|&(id, client)| {
            let file = write::user_file(paths, client).ok()?;
            Some(ClientTarget {
                client: id,
                display_name: client.display_name(),
                found: file.parent().is_some_and(Path::is_dir),
                http: client != Client::ClaudeDesktop,
                file,
            })
        })
        .collect()
}

/// Whether `file` (`client`'s config) has an entry `name` that is not Patchbay's: what Add
/// refuses unless told to replace it. An unreadable file has none.
pub fn has_foreign_entry(client: Client, file: &Path, name: &str) -> bool {
    let config = patchbay_runtimes::clients::ConfigFile {
        client,
        scope: patchbay_runtimes::clients::ClientScope::User,
        path: file.to_path_buf(),
    };
    patchbay_runtimes::clients::formats::read_file(&config).is_ok_and(|servers| {
        servers
            .iter()
            .any(|s| s.name == name && write::patchbay_target(s).is_none())
    })
}

/// What "Switch to Patchbay" did.
#[derive(Debug, Clone)]
pub struct Switched {
    /// The connector the entry's URL belongs to.
    pub connector: String,
    /// It was found only in clients' configs and is now in the user catalog (its secrets in the
    /// vault), so it outlives the entry that was switched.
    pub managed: bool,
    pub written: Written,
}

/// "Switch to Patchbay": the `npx mcp-remote URL` entry `entry` of `client`'s user config is
/// rewritten, under the same name, to reach the connector in use with that URL through the
/// route `route_for(connector)` gives. A connector known only from clients' configs is managed
/// first ([`Patchbay::manage`]): once switched, no client names its URL any more.
pub fn switch_to_patchbay(
    patchbay: &Patchbay,
    client: Client,
    entry: &str,
    route_for: impl FnOnce(&str) -> Result<Route, CoreError>,
) -> Result<Switched, CoreError> {
    let (file, connector) = switch_source(patchbay, client, entry)?;
    let report = patchbay.status();
    let managed = report
        .connector(&connector)
        .is_some_and(|row| row.origin == Origin::Client);
    let route = route_for(&connector)?;
    if managed {
        patchbay.manage(&connector)?;
    }
    let written = write::switch_mcp_remote(client, &file, entry, &route.target(&connector))
        .map_err(write_error)?;
    Ok(Switched {
        connector,
        managed,
        written,
    })
}

/// What [`switch_to_patchbay`] would change in the client's file (the connector it finds is
/// the preview's), for a confirmation; nothing is written or managed.
pub fn preview_switch(
    patchbay: &Patchbay,
    client: Client,
    entry: &str,
    route_for: impl FnOnce(&str) -> Result<Route, CoreError>,
) -> Result<WritePlan, CoreError> {
    let (file, connector) = switch_source(patchbay, client, entry)?;
    let route = route_for(&connector)?;
    let preview = write::preview_switch(client, &file, entry, &route.clone().target(&connector))
        .map_err(write_error)?;
    let not_ready = patchbay
        .status()
        .connector(&connector)
        .and_then(|row| not_ready_warning(row, client));
    Ok(WritePlan::new(connector, preview, not_ready, &route))
}

/// The client's file and the connector in use with the URL its mcp-remote entry `entry` bridges.
fn switch_source(
    patchbay: &Patchbay,
    client: Client,
    entry: &str,
) -> Result<(PathBuf, String), CoreError> {
    let file = client_file(patchbay, client)?;
    let url = write::mcp_remote_url(client, &file, entry).map_err(write_error)?;
    let connector =
        connector_with_url(patchbay, &url)?.ok_or_else(|| CoreError::NoConnectorForUrl {
            url: url.clone(),
            entry: entry.to_owned(),
        })?;
    Ok((file, connector))
}

/// An `npx mcp-remote URL` entry in a client's user config that "Switch to Patchbay" can
/// rewrite (what the window offers the button for).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SwitchCandidate {
    /// The client's id, as `patchbay add-to` takes it (`cursor`, `claude-code`, `codex`, ...).
    pub client: &'static str,
    /// The entry's name in the client's config.
    pub entry: String,
    /// The URL mcp-remote bridges.
    pub url: String,
    /// The connector in use with that URL, when there is one (else the switch is refused).
    pub connector: Option<String>,
    pub file: PathBuf,
}

/// Every mcp-remote entry in the user configs of the clients Add writes. A file that cannot be
/// read contributes none (the status already names it).
pub fn switch_candidates(patchbay: &Patchbay) -> Result<Vec<SwitchCandidate>, CoreError> {
    let paths = client_paths(patchbay)?;
    let mut candidates = Vec::new();
    for (id, client) in CLIENTS {
        let Ok(file) = write::user_file(&paths, client) else {
            continue;
        };
        let config = patchbay_runtimes::clients::ConfigFile {
            client,
            scope: patchbay_runtimes::clients::ClientScope::User,
            path: file.clone(),
        };
        let Ok(servers) = patchbay_runtimes::clients::formats::read_file(&config) else {
            continue;
        };
        for server in servers {
            let Some(options) = server.mcp_remote_options() else {
                continue;
            };
            candidates.push(SwitchCandidate {
                client: id,
                connector: connector_with_url(patchbay, &options.server_url)?,
                entry: server.name,
                url: options.server_url,
                file: file.clone(),
            });
        }
    }
    Ok(candidates)
}

/// The connector in use whose URL (its `${VAR}`s expanded) is `url`, ignoring one trailing `/`
/// and the case of the scheme and host. The first in catalog order.
pub fn connector_with_url(patchbay: &Patchbay, url: &str) -> Result<Option<String>, CoreError> {
    let wanted = patchbay_catalog::url_key(url);
    let (catalog, in_use) = patchbay.catalog_in_use();
    let resolve = |n: &str| patchbay.resolve_variable(n);
    let found = catalog
        .servers()
        .filter(|e| in_use.contains(e.name.as_str()))
        .find(|e| match &e.transport {
            Transport::Stdio { .. } => false,
            other => other
                .url()
                .and_then(|u| expand(u, &resolve).ok())
                .is_some_and(|u| patchbay_catalog::url_key(&u) == wanted),
        })
        .map(|e| e.name.as_str().to_owned());
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ids() {
        assert_eq!(parse_client("cursor").unwrap(), Client::Cursor);
        assert_eq!(parse_client("VS_Code").unwrap(), Client::VsCode);
        assert_eq!(
            parse_client("claude_desktop").unwrap(),
            Client::ClaudeDesktop
        );
        assert_eq!(parse_client("windsurf").unwrap(), Client::Windsurf);
        assert_eq!(parse_client("claude").unwrap(), Client::ClaudeCode);
        assert_eq!(parse_client("Claude-Code").unwrap(), Client::ClaudeCode);
        assert_eq!(parse_client("codex").unwrap(), Client::Codex);
        assert_eq!(parse_client("gemini-cli").unwrap(), Client::GeminiCli);
        let err = parse_client("emacs").unwrap_err().to_string();
        assert!(
            err.contains("cursor, vscode, claude-desktop, windsurf, claude-code, codex, gemini"),
            "{err}"
        );
    }

    #[test]
    fn targets_are_found_by_their_config_directory_and_claude_desktop_is_stdio_only() {
        let home = tempfile::tempdir().unwrap();
        let paths =
            ClientPaths::resolve(home.path(), patchbay_runtimes::clients::Os::Linux, &|_| {
                None
            });
        std::fs::create_dir_all(home.path().join(".cursor")).unwrap();
        std::fs::create_dir_all(home.path().join(".config/Claude")).unwrap();
        let targets = targets_in(&paths);
        let ids: Vec<_> = targets.iter().map(|t| t.client).collect();
        assert_eq!(
            ids,
            ["cursor", "vscode", "claude-desktop", "windsurf", "gemini"]
        );
        let found: Vec<_> = targets
            .iter()
            .filter(|t| t.found)
            .map(|t| t.client)
            .collect();
        assert_eq!(found, ["cursor", "claude-desktop"]);
        let http: Vec<_> = targets
            .iter()
            .filter(|t| t.http)
            .map(|t| t.client)
            .collect();
        assert_eq!(http, ["cursor", "vscode", "windsurf", "gemini"]);
        assert_eq!(targets[0].file, home.path().join(".cursor/mcp.json"));
        assert_eq!(targets[0].display_name, "Cursor");
    }

    #[test]
    fn a_foreign_entry_is_one_of_that_name_not_pointing_at_patchbay() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        assert!(!has_foreign_entry(Client::Cursor, &file, "linear"));
        std::fs::write(
            &file,
            r#"{"mcpServers": {"linear": {"command": "npx", "args": ["-y", "mcp-remote", "https://mcp.linear.app/sse"]}}}"#,
        )
        .unwrap();
        assert!(has_foreign_entry(Client::Cursor, &file, "linear"));
        assert!(!has_foreign_entry(Client::Cursor, &file, "github"));
        let route = Route::Connect {
            command: "/usr/bin/patchbay".into(),
            global_args: Vec::new(),
        };
        write::add(
            Client::Cursor,
            &file,
            "linear",
            &route.target("linear"),
            Conflict::Replace,
        )
        .unwrap();
        assert!(!has_foreign_entry(Client::Cursor, &file, "linear"));
        std::fs::write(&file, "{ not json").unwrap();
        assert!(!has_foreign_entry(Client::Cursor, &file, "linear"));
    }

    #[test]
    fn urls_compare_like_the_gateway_compares_them() {
        assert_eq!(
            patchbay_catalog::url_key("HTTP://LocalHost:35557/MCP/"),
            "http://localhost:35557/MCP"
        );
        assert_eq!(
            patchbay_catalog::url_key(" https://a.example "),
            "https://a.example"
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_connect_command_is_an_absolute_path_preferring_the_path_entry() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("cellar/1.0/bin");
        let bin = dir.path().join("bin");
        let other = dir.path().join("other");
        for d in [&real, &bin, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        let exe = real.join("patchbay");
        std::fs::write(&exe, "").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A package manager's link on PATH to the versioned binary.
        std::os::unix::fs::symlink(&exe, bin.join("patchbay")).unwrap();
        let link = bin.join("patchbay").to_string_lossy().into_owned();
        let direct = exe.to_string_lossy().into_owned();

        assert_eq!(connect_command(&exe, Some(bin.as_os_str())), link);
        assert_eq!(connect_command(&exe, Some(other.as_os_str())), direct);
        assert_eq!(connect_command(&exe, None), direct);
        // Another `patchbay` first on PATH: not the one running, so the running one.
        std::fs::write(other.join("patchbay"), "").unwrap();
        let path = std::env::join_paths([&other, &bin]).unwrap();
        assert_eq!(connect_command(&exe, Some(&path)), direct);
        // A relative PATH entry is never written into a client's config.
        assert_eq!(
            connect_command(&exe, Some(std::ffi::OsStr::new("bin"))),
            direct
        );
        // The app: the patchbay beside it, else the bare name.
        assert_eq!(connect_command(&real.join("patchbay-app"), None), direct);
        let lonely = connect_command(&dir.path().join("lonely/app"), None);
        assert_eq!(lonely, "patchbay");
        assert_eq!(connect_warning(&lonely), Some(NOT_INSTALLED));
        assert_eq!(connect_warning(&direct), None);
        assert_eq!(
            connect_command(&dir.path().join("lonely/app"), Some(bin.as_os_str())),
            link,
            "the app with no patchbay beside it: the one on PATH"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_binary_in_a_build_tree_is_never_written() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("checkout/target");
        let debug = target.join("debug");
        let installed = dir.path().join("usr/bin");
        for d in [&debug, &installed] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(
            target.join("CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by cargo.\n",
        )
        .unwrap();
        for bin in [
            debug.join("patchbay"),
            debug.join("patchbay-app"),
            installed.join("patchbay"),
        ] {
            std::fs::write(&bin, "").unwrap();
            std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        assert!(in_build_tree(&debug.join("patchbay")));
        assert!(!in_build_tree(&installed.join("patchbay")));
        // The dev build, nothing installed: bare `patchbay`, and the window says so.
        let dev = connect_command(&debug.join("patchbay-app"), None);
        assert_eq!(dev, "patchbay");
        assert_eq!(connect_warning(&dev), Some(NOT_INSTALLED));
        // The build tree on PATH (a developer's shell) is skipped for the installed one.
        let path = std::env::join_paths([&debug, &installed]).unwrap();
        let found = connect_command(&debug.join("patchbay"), Some(&path));
        assert_eq!(found, installed.join("patchbay").to_string_lossy());
        assert_eq!(connect_warning(&found), None);
        // A link into the build tree is in it too.
        let link_dir = dir.path().join("home/.local/bin");
        std::fs::create_dir_all(&link_dir).unwrap();
        std::os::unix::fs::symlink(debug.join("patchbay"), link_dir.join("patchbay")).unwrap();
        assert!(in_build_tree(&link_dir.join("patchbay")));
        assert_eq!(
            connect_command(&debug.join("patchbay"), Some(link_dir.as_os_str())),
            "patchbay"
        );
    }
}

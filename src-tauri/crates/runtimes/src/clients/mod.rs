//! The MCP servers configured in every client a local agent developer uses (Claude Code, Codex,
//! Claude Desktop, Cursor, VS Code, Windsurf, Gemini CLI), remote and stdio, read-only; when two
//! of them are the same server; one record per server with the clients it was found in; and the
//! AIR catalog form of a client's entry with its literal secrets taken out ([`air`]).
//!
//! Where each client keeps its files is [`ClientPaths`] (per OS, from an injectable home and
//! environment, so all three OSes are testable anywhere); each file format, with its source, is
//! in [`formats`]. A missing file contributes nothing; a malformed one is an error naming the file
//! and where in it, and never hides the other files' servers ([`ClientScan::errors`]).
//!
//! [`crate::config`] reads the same Claude Code and Codex files but only their remote servers (what
//! Patchbay bridges credentials for); this module reads every entry, stdio included, with its own
//! parsers, and reuses `config`'s paths ([`crate::config::RuntimePaths`]) and project discovery.

pub mod air;
pub mod formats;
pub mod jsonc;
pub mod write;

use crate::config::{Resolver, RuntimePaths};
use crate::RuntimeError;
use indexmap::IndexMap;
use patchbay_vault::Secret;
use std::path::{Path, PathBuf};

/// A client that configures MCP servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Client {
    ClaudeCode,
    Codex,
    ClaudeDesktop,
    Cursor,
    VsCode,
    Windsurf,
    GeminiCli,
}

impl Client {
    pub const ALL: [Client; 7] = [
        Client::ClaudeCode,
        Client::Codex,
        Client::ClaudeDesktop,
        Client::Cursor,
        Client::VsCode,
        Client::Windsurf,
        Client::GeminiCli,
    ];

    pub fn display_name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Claude Code",
            Client::Codex => "Codex",
            Client::ClaudeDesktop => "Claude Desktop",
            Client::Cursor => "Cursor",
            Client::VsCode => "VS Code",
            Client::Windsurf => "Windsurf",
            Client::GeminiCli => "Gemini CLI",
        }
    }

    /// The prefix of generated variable names and of nothing else: `CURSOR`, `VSCODE`, ...
    pub fn var_prefix(self) -> &'static str {
        match self {
            Client::ClaudeCode => "CLAUDE",
            Client::Codex => "CODEX",
            Client::ClaudeDesktop => "CLAUDE_DESKTOP",
            Client::Cursor => "CURSOR",
            Client::VsCode => "VSCODE",
            Client::Windsurf => "WINDSURF",
            Client::GeminiCli => "GEMINI",
        }
    }
}

/// Which of a client's scopes an entry came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "project")]
pub enum ClientScope {
    /// The user's own file (or Claude Code's top-level `mcpServers`).
    User,
    /// Claude Code's per-project entries in `~/.claude.json` (`projects.<dir>.mcpServers`).
    Local(PathBuf),
    /// A file inside a project directory (`.mcp.json`, `.cursor/mcp.json`, ...).
    Project(PathBuf),
}

/// How the client reaches the server. Env and header values stay wrapped: they are often
/// literal API keys.
#[derive(Clone, PartialEq, Eq)]
pub enum ClientTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: IndexMap<String, Secret>,
    },
    Sse {
        url: String,
        headers: IndexMap<String, Secret>,
    },
    StreamableHttp {
        url: String,
        headers: IndexMap<String, Secret>,
    },
}

impl ClientTransport {
    /// `stdio`, `sse` or `streamable-http` (the catalog's names).
    pub fn kind(&self) -> &'static str {
        match self {
            ClientTransport::Stdio { .. } => "stdio",
            ClientTransport::Sse { .. } => "sse",
            ClientTransport::StreamableHttp { .. } => "streamable-http",
        }
    }

    pub fn url(&self) -> Option<&str> {
        match self {
            ClientTransport::Stdio { .. } => None,
            ClientTransport::Sse { url, .. } | ClientTransport::StreamableHttp { url, .. } => {
                Some(url)
            }
        }
    }
}

impl std::fmt::Debug for ClientTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientTransport::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", &redacted_args(args))
                .field("env", env)
                .finish(),
            ClientTransport::Sse { url, headers } => f
                .debug_struct("Sse")
                .field("url", url)
                .field("headers", headers)
                .finish(),
            ClientTransport::StreamableHttp { url, headers } => f
                .debug_struct("StreamableHttp")
                .field("url", url)
                .field("headers", headers)
                .finish(),
        }
    }
}

/// Arguments as Debug shows them: a value that looks like a credential (after `--header` with a
/// credential header name, `--api-key=...`, `Bearer ...`) is `[redacted]`.
/// What a hidden value reads as, in an argument list and a preview alike (as `Secret`'s Debug).
pub const REDACTED: &str = "[redacted]";

pub fn redacted_args(args: &[String]) -> Vec<String> {
    let mut shown = Vec::with_capacity(args.len());
    for (i, arg) in args.iter().enumerate() {
        let after_header = i > 0 && matches!(args[i - 1].as_str(), "--header" | "-H");
        let secret = if after_header {
            arg.split_once(':')
                .is_some_and(|(name, _)| patchbay_catalog::is_credential_header(name.trim()))
        } else if let Some((key, _)) = arg.split_once('=') {
            is_credential_name(key.trim_start_matches('-'))
        } else {
            arg.to_ascii_lowercase().contains("bearer ")
        };
        shown.push(if secret {
            REDACTED.to_string()
        } else {
            arg.clone()
        });
    }
    shown
}

/// A header or environment variable name that carries a credential: the catalog's header rule
/// (`authorization`, `token`, `secret`, `password`, `api-key`, ... as a whole `-`/`_` part), a
/// last part `key`, `pat`, `pwd` or `passwd` (`STRIPE_KEY`, `GITHUB_PAT`, `MYSQL_PWD`), or a name
/// ending in `password`, `passwd`, `secret`, `token` or `apikey` (`PGPASSWORD`).
pub fn is_credential_name(name: &str) -> bool {
    if patchbay_catalog::is_credential_header(name) {
        return true;
    }
    let lower = name.to_lowercase();
    let last = lower.rsplit(['-', '_']).next().unwrap_or("");
    matches!(last, "key" | "pat" | "pwd" | "passwd")
        || ["password", "passwd", "secret", "token", "apikey"]
            .iter()
            .any(|suffix| lower.ends_with(suffix))
}

/// One MCP server as one client configures it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientServer {
    pub client: Client,
    pub scope: ClientScope,
    /// The file it was read from.
    pub file: PathBuf,
    /// The client's name for it (the key in its map).
    pub name: String,
    pub transport: ClientTransport,
    /// `false` when the client marks it off (`disabled: true`, Codex's `enabled = false`).
    pub enabled: bool,
}

/// Where the clients keep their files, for one OS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientPaths {
    pub os: Os,
    /// `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`), as [`RuntimePaths`] resolves it.
    pub claude_json: PathBuf,
    /// `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`.
    pub codex_config: PathBuf,
    pub claude_desktop_config: PathBuf,
    pub cursor_user: PathBuf,
    pub vscode_user: PathBuf,
    pub windsurf: PathBuf,
    pub gemini_user: PathBuf,
}

/// The OS whose conventions decide the paths (a parameter, so each is testable on Linux).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    MacOs,
    Windows,
}

impl Os {
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }
}

impl ClientPaths {
    /// From a home directory, an OS and an environment (empty variables count as unset).
    /// - Claude Desktop: Linux `$XDG_CONFIG_HOME/Claude` (else `~/.config/Claude`; no official
    ///   Linux build, this is where the community builds and Electron's `userData` put it), macOS
    ///   `~/Library/Application Support/Claude`, Windows `%APPDATA%\Claude` (else
    ///   `~\AppData\Roaming\Claude`); file `claude_desktop_config.json`.
    /// - VS Code (default profile): the user data dir's `User/mcp.json`: Linux
    ///   `$XDG_CONFIG_HOME/Code` (else `~/.config/Code`), macOS `~/Library/Application Support/Code`,
    ///   Windows `%APPDATA%\Code`.
    /// - Cursor `~/.cursor/mcp.json`, Windsurf `~/.codeium/windsurf/mcp_config.json`, Gemini CLI
    ///   `~/.gemini/settings.json` on every OS (`%USERPROFILE%` is the home on Windows).
    pub fn resolve(home: &Path, os: Os, env: Resolver<'_>) -> ClientPaths {
        let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let runtime = RuntimePaths::resolve(home, env);
        let app_config = match os {
            Os::Linux => var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config")),
            Os::MacOs => home.join("Library").join("Application Support"),
            Os::Windows => var("APPDATA").unwrap_or_else(|| home.join("AppData").join("Roaming")),
        };
        ClientPaths {
            os,
            claude_json: runtime.claude_json.clone(),
            codex_config: runtime.codex_config(),
            claude_desktop_config: app_config.join("Claude").join("claude_desktop_config.json"),
            cursor_user: home.join(".cursor").join("mcp.json"),
            vscode_user: app_config.join("Code").join("User").join("mcp.json"),
            windsurf: home
                .join(".codeium")
                .join("windsurf")
                .join("mcp_config.json"),
            gemini_user: home.join(".gemini").join("settings.json"),
        }
    }

    /// From the process environment and the running OS; `None` when no home directory is known.
    pub fn from_env() -> Option<ClientPaths> {
        let home = crate::config::home_dir()?;
        Some(Self::resolve(&home, Os::current(), &|name| {
            std::env::var(name).ok()
        }))
    }

    /// Every file to read and how: the user files, then each project's.
    pub fn files(&self, projects: &[PathBuf]) -> Vec<ConfigFile> {
        let mut files = vec![
            ConfigFile::new(Client::ClaudeCode, ClientScope::User, &self.claude_json),
            ConfigFile::new(Client::Codex, ClientScope::User, &self.codex_config),
            ConfigFile::new(
                Client::ClaudeDesktop,
                ClientScope::User,
                &self.claude_desktop_config,
            ),
            ConfigFile::new(Client::Cursor, ClientScope::User, &self.cursor_user),
            ConfigFile::new(Client::VsCode, ClientScope::User, &self.vscode_user),
            ConfigFile::new(Client::Windsurf, ClientScope::User, &self.windsurf),
            ConfigFile::new(Client::GeminiCli, ClientScope::User, &self.gemini_user),
        ];
        for dir in projects {
            let scope = ClientScope::Project(dir.clone());
            for (client, relative) in [
                (Client::ClaudeCode, ".mcp.json"),
                (Client::Codex, ".codex/config.toml"),
                (Client::Cursor, ".cursor/mcp.json"),
                (Client::VsCode, ".vscode/mcp.json"),
                (Client::GeminiCli, ".gemini/settings.json"),
            ] {
                files.push(ConfigFile::new(client, scope.clone(), &dir.join(relative)));
            }
        }
        files
    }
}

/// One config file to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    pub client: Client,
    pub scope: ClientScope,
    pub path: PathBuf,
}

impl ConfigFile {
    fn new(client: Client, scope: ClientScope, path: &Path) -> ConfigFile {
        ConfigFile {
            client,
            scope,
            path: path.to_path_buf(),
        }
    }
}

/// The project directories worth reading: the ones Claude Code knows (the keys of `projects`
/// in `.claude.json`, via [`crate::config::claude_project_dirs`]) and `cwd`, without repeats.
/// A `.claude.json` that cannot be read contributes no directories (its error is reported when
/// the file itself is read).
pub fn default_project_dirs(paths: &ClientPaths, cwd: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = crate::config::claude_project_dirs(&paths.claude_json).unwrap_or_default();
    if let Some(cwd) = cwd {
        dirs.push(cwd.to_path_buf());
    }
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| seen.insert(d.clone()));
    dirs
}

/// Every server found, and every file that could not be read.
#[derive(Debug, Default)]
pub struct ClientScan {
    pub servers: Vec<ClientServer>,
    pub errors: Vec<ClientReadError>,
}

/// A client's config file that could not be read or parsed: its servers are missing from the
/// scan (the other clients' are there).
#[derive(Debug)]
pub struct ClientReadError {
    pub client: Client,
    pub error: RuntimeError,
}

impl std::fmt::Display for ClientReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}'s config could not be read: {}",
            self.client.display_name(),
            self.error
        )
    }
}

/// Read every client's files (see [`ClientPaths::files`]). Never writes.
pub fn read_all(paths: &ClientPaths, projects: &[PathBuf]) -> ClientScan {
    let mut scan = ClientScan::default();
    let mut read = std::collections::HashSet::new();
    for file in paths.files(projects) {
        // A project that is also the home directory (or listed twice) is read once.
        if !read.insert((file.client, file.path.clone())) {
            continue;
        }
        match formats::read_file(&file) {
            Ok(found) => scan.servers.extend(found),
            Err(error) => scan.errors.push(ClientReadError {
                client: file.client,
                error,
            }),
        }
    }
    scan
}

/// `command`'s file name without a directory or a Windows launcher suffix (`.cmd`, `.exe`,
/// `.bat`, `.ps1`): `/usr/bin/npx`, `npx.cmd` and `C:\...\npx.exe` are all `npx`.
pub fn command_basename(command: &str) -> String {
    let base = command.rsplit(['/', '\\']).next().unwrap_or(command);
    let lower = base.to_ascii_lowercase();
    for suffix in [".cmd", ".exe", ".bat", ".ps1"] {
        if lower.ends_with(suffix) {
            return base[..base.len() - suffix.len()].to_string();
        }
    }
    base.to_string()
}

/// What makes two entries the same server.
///
/// - Remote: the URL's [`patchbay_catalog::url_key`] (as [`crate::config::match_catalog`]
///   matches: case of scheme and host, a default port, a fragment, one trailing `/` do not
///   count); the transport (SSE or streamable HTTP) and headers
///   do not count.
/// - stdio that runs mcp-remote (`npx [-y] mcp-remote URL ...`): the remote URL it bridges, so
///   Claude Desktop's bridged entry is the same server as Cursor's direct one.
/// - Other stdio: the command's basename ([`command_basename`]) and the arguments, except that
///   the package runners' "don't ask" flags (`-y`, `--yes` for `npx`) are dropped, because
///   `npx -y pkg` and `npx pkg` run the same thing. Nothing else is normalised: `pkg@latest` and
///   `pkg` differ, env does not count.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerIdentity {
    Url(String),
    Command { command: String, args: Vec<String> },
}

impl ServerIdentity {
    pub fn of_url(url: &str) -> ServerIdentity {
        ServerIdentity::Url(patchbay_catalog::url_key(url))
    }

    pub fn of_command(command: &str, args: &[String]) -> ServerIdentity {
        if let Some(bridged) = crate::mcp_remote::invocation(command, args) {
            return ServerIdentity::of_url(&bridged.server_url);
        }
        let command = command_basename(command);
        let args = if matches!(command.as_str(), "npx" | "bunx") {
            args.iter()
                .filter(|a| !matches!(a.as_str(), "-y" | "--yes"))
                .cloned()
                .collect()
        } else {
            args.to_vec()
        };
        ServerIdentity::Command { command, args }
    }

    /// A catalog entry's identity: its URL with `${VAR:-default}` defaults taken (as
    /// `match_catalog` does), or its command and args as written.
    pub fn of_catalog(entry: &patchbay_catalog::ServerEntry) -> ServerIdentity {
        match &entry.transport {
            patchbay_catalog::Transport::Stdio { command, args, .. } => {
                ServerIdentity::of_command(command, args)
            }
            other => {
                let url = other.url().unwrap_or_default();
                let url = patchbay_catalog::expand(url, &|_| None).unwrap_or_else(|_| url.into());
                ServerIdentity::of_url(&url)
            }
        }
    }
}

impl ClientServer {
    pub fn identity(&self) -> ServerIdentity {
        match &self.transport {
            ClientTransport::Stdio { command, args, .. } => {
                ServerIdentity::of_command(command, args)
            }
            ClientTransport::Sse { url, .. } | ClientTransport::StreamableHttp { url, .. } => {
                ServerIdentity::of_url(url)
            }
        }
    }

    /// The same server as `other` (see [`ServerIdentity`]).
    pub fn same_server(&self, other: &ClientServer) -> bool {
        self.identity() == other.identity()
    }

    /// The same server as a catalog entry.
    pub fn is_catalog_entry(&self, entry: &patchbay_catalog::ServerEntry) -> bool {
        self.identity() == ServerIdentity::of_catalog(entry)
    }

    /// The mcp-remote options this entry runs with, when it is an mcp-remote bridge (a candidate
    /// for [`crate::mcp_remote::read_mcp_remote`]).
    pub fn mcp_remote_options(&self) -> Option<crate::mcp_remote::McpRemoteOptions> {
        match &self.transport {
            ClientTransport::Stdio { command, args, .. } => {
                crate::mcp_remote::invocation(command, args)
            }
            _ => None,
        }
    }
}

/// One server and every client entry it was found in.
#[derive(Debug, Clone)]
pub struct MergedServer {
    pub identity: ServerIdentity,
    /// The first entry's name (the first client in [`Client::ALL`] order that has it).
    pub name: String,
    pub entries: Vec<ClientServer>,
}

impl MergedServer {
    /// The clients it was found in, each once, in the order found.
    pub fn clients(&self) -> Vec<Client> {
        let mut clients = Vec::new();
        for entry in &self.entries {
            if !clients.contains(&entry.client) {
                clients.push(entry.client);
            }
        }
        clients
    }

    /// `Found in Cursor, Claude Code`.
    pub fn found_in(&self) -> String {
        let names: Vec<&str> = self.clients().iter().map(|c| c.display_name()).collect();
        format!("Found in {}", names.join(", "))
    }
}

/// What status and the window show of a merged server: no env or header values, credential-looking
/// arguments redacted ([`redacted_args`]), so it may be printed and serialized.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FoundServer {
    pub name: String,
    /// `stdio`, `sse` or `streamable-http`, of the first entry.
    pub kind: &'static str,
    pub url: Option<String>,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub found_in: Vec<Client>,
    pub files: Vec<PathBuf>,
}

impl MergedServer {
    pub fn summary(&self) -> FoundServer {
        let first = &self.entries[0].transport;
        let (command, args) = match first {
            ClientTransport::Stdio { command, args, .. } => {
                (Some(command.clone()), redacted_args(args))
            }
            _ => (None, Vec::new()),
        };
        let mut files: Vec<PathBuf> = Vec::new();
        for entry in &self.entries {
            if !files.contains(&entry.file) {
                files.push(entry.file.clone());
            }
        }
        FoundServer {
            name: self.name.clone(),
            kind: first.kind(),
            url: first.url().map(str::to_string),
            command,
            args,
            found_in: self.clients(),
            files,
        }
    }
}

/// Group entries from many clients into one record per server (see [`ServerIdentity`]), in the
/// order each server was first seen.
pub fn merge(servers: impl IntoIterator<Item = ClientServer>) -> Vec<MergedServer> {
    let mut merged: Vec<MergedServer> = Vec::new();
    let mut index: std::collections::HashMap<ServerIdentity, usize> = Default::default();
    for server in servers {
        let identity = server.identity();
        match index.get(&identity) {
            Some(&at) => merged[at].entries.push(server),
            None => {
                index.insert(identity.clone(), merged.len());
                merged.push(MergedServer {
                    identity,
                    name: server.name.clone(),
                    entries: vec![server],
                });
            }
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn paths_per_os() {
        let home = Path::new("/home/u");
        let linux = ClientPaths::resolve(home, Os::Linux, &|_| None);
        assert_eq!(
            linux.claude_desktop_config,
            home.join(".config/Claude/claude_desktop_config.json")
        );
        assert_eq!(linux.vscode_user, home.join(".config/Code/User/mcp.json"));
        assert_eq!(linux.cursor_user, home.join(".cursor/mcp.json"));
        assert_eq!(
            linux.windsurf,
            home.join(".codeium/windsurf/mcp_config.json")
        );
        assert_eq!(linux.gemini_user, home.join(".gemini/settings.json"));
        assert_eq!(linux.claude_json, home.join(".claude.json"));
        assert_eq!(linux.codex_config, home.join(".codex/config.toml"));

        let xdg = env_of(&[("XDG_CONFIG_HOME", "/x"), ("CODEX_HOME", "/c")]);
        let linux = ClientPaths::resolve(home, Os::Linux, &xdg);
        assert_eq!(
            linux.claude_desktop_config,
            Path::new("/x/Claude/claude_desktop_config.json")
        );
        assert_eq!(linux.vscode_user, Path::new("/x/Code/User/mcp.json"));
        assert_eq!(linux.codex_config, Path::new("/c/config.toml"));

        let mac = ClientPaths::resolve(Path::new("/Users/u"), Os::MacOs, &xdg);
        assert_eq!(
            mac.claude_desktop_config,
            Path::new("/Users/u/Library/Application Support/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            mac.vscode_user,
            Path::new("/Users/u/Library/Application Support/Code/User/mcp.json")
        );

        let appdata = env_of(&[("APPDATA", "/C/Users/u/AppData/Roaming")]);
        let win = ClientPaths::resolve(Path::new("/C/Users/u"), Os::Windows, &appdata);
        assert_eq!(
            win.claude_desktop_config,
            Path::new("/C/Users/u/AppData/Roaming/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            win.vscode_user,
            Path::new("/C/Users/u/AppData/Roaming/Code/User/mcp.json")
        );
        assert_eq!(win.cursor_user, Path::new("/C/Users/u/.cursor/mcp.json"));
        let no_appdata = ClientPaths::resolve(Path::new("/C/Users/u"), Os::Windows, &|_| None);
        assert_eq!(
            no_appdata.claude_desktop_config,
            Path::new("/C/Users/u/AppData/Roaming/Claude/claude_desktop_config.json")
        );
    }

    fn stdio(client: Client, command: &str, args: &[&str]) -> ClientServer {
        ClientServer {
            client,
            scope: ClientScope::User,
            file: "f".into(),
            name: "x".into(),
            transport: ClientTransport::Stdio {
                command: command.into(),
                args: args.iter().map(|a| a.to_string()).collect(),
                env: IndexMap::new(),
            },
            enabled: true,
        }
    }

    fn remote(client: Client, url: &str) -> ClientServer {
        ClientServer {
            client,
            scope: ClientScope::User,
            file: "f".into(),
            name: "r".into(),
            transport: ClientTransport::Sse {
                url: url.into(),
                headers: IndexMap::new(),
            },
            enabled: true,
        }
    }

    #[test]
    fn identity_rules() {
        let a = stdio(
            Client::Cursor,
            "npx",
            &["-y", "@modelcontextprotocol/server-memory"],
        );
        let b = stdio(
            Client::ClaudeCode,
            "/usr/local/bin/npx.cmd",
            &["@modelcontextprotocol/server-memory"],
        );
        assert!(a.same_server(&b));
        let c = stdio(
            Client::Cursor,
            "npx",
            &["-y", "@modelcontextprotocol/server-memory@latest"],
        );
        assert!(!a.same_server(&c));
        let d = stdio(Client::Cursor, "uvx", &["-y", "pkg"]);
        let e = stdio(Client::Cursor, "uvx", &["pkg"]);
        assert!(!d.same_server(&e), "only npx/bunx drop -y");

        let r1 = remote(Client::Cursor, " https://mcp.example.com/mcp/ ");
        let r2 = remote(Client::VsCode, "https://mcp.example.com/mcp");
        assert!(r1.same_server(&r2));
        let r3 = remote(Client::VsCode, "https://mcp.example.com/mcp//");
        assert!(!r2.same_server(&r3), "one slash forgiven, not two");
        let bridged = stdio(
            Client::ClaudeDesktop,
            "npx",
            &[
                "mcp-remote",
                "https://mcp.example.com/mcp",
                "--header",
                "A:b",
            ],
        );
        assert!(bridged.same_server(&r2));
    }

    #[test]
    fn merge_groups_and_names_clients() {
        let merged = merge(vec![
            remote(Client::Cursor, "https://a.example/mcp"),
            stdio(Client::Cursor, "npx", &["-y", "pkg"]),
            remote(Client::ClaudeCode, "https://a.example/mcp/"),
            remote(Client::Cursor, "https://a.example/mcp"),
            stdio(Client::Windsurf, "npx", &["pkg"]),
        ]);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].entries.len(), 3);
        assert_eq!(
            merged[0].clients(),
            vec![Client::Cursor, Client::ClaudeCode]
        );
        assert_eq!(merged[0].found_in(), "Found in Cursor, Claude Code");
        assert_eq!(merged[1].found_in(), "Found in Cursor, Windsurf");
    }

    #[test]
    fn debug_redacts_env_headers_and_credential_args() {
        let mut env = IndexMap::new();
        env.insert("GITHUB_TOKEN".to_string(), Secret::new("ghp_live_value"));
        let server = ClientTransport::Stdio {
            command: "npx".into(),
            args: vec![
                "mcp-remote".into(),
                "https://a/mcp".into(),
                "--header".into(),
                "Authorization: Bearer sk-arg-secret".into(),
                "--api-key=sk-eq-secret".into(),
                "--verbose".into(),
            ],
            env,
        };
        let shown = format!("{server:?}");
        for secret in ["ghp_live_value", "sk-arg-secret", "sk-eq-secret"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(
            shown.contains("--verbose") && shown.contains("GITHUB_TOKEN"),
            "{shown}"
        );
        let mut headers = IndexMap::new();
        headers.insert("X-Api-Key".to_string(), Secret::new("k-123"));
        let remote = ClientTransport::StreamableHttp {
            url: "https://a/mcp".into(),
            headers,
        };
        assert!(!format!("{remote:?}").contains("k-123"));
    }

    #[test]
    fn credential_names() {
        for name in [
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "BRAVE_API_KEY",
            "STRIPE_KEY",
            "DB_PASSWORD",
            "GITLAB_PAT",
            "OPENAI_APIKEY",
        ] {
            assert!(is_credential_name(name), "{name}");
        }
        for name in ["PATH", "LOG_LEVEL", "KEYBOARD", "SSH_KEY_PATH", "NODE_ENV"] {
            assert!(!is_credential_name(name), "{name}");
        }
    }
}

//! The user's own setup, read from the clients on this machine: which catalog connectors a
//! client (Claude Code, Codex, Claude Desktop, Cursor, VS Code, Windsurf, Gemini CLI) already
//! configures, and the servers a client configures that no catalog has, which become connectors
//! of their own, named and typed from that config (`origin: client`). Nothing here writes a
//! client's file.
//!
//! A literal secret in a client's config (an `Authorization` header, an API key in `env`) is
//! never put into a catalog entry: the synthesized entry carries a `${VAR}` placeholder and the
//! value stays in memory, resolved after the vault and the environment, until "Manage with
//! Patchbay" moves it into the vault.
//!
//! A server whose URL is Patchbay's own gateway ([`OwnGateway`]; the rule is
//! [`patchbay_catalog::own_gateway`]) is skipped: it is Patchbay, and as a connector the
//! aggregate would list itself.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Mutex, RwLock};

use patchbay_catalog::{Catalog, CatalogItem};
use patchbay_runtimes::clients::{
    self, air, merge, ClientPaths, ClientServer, ClientTransport, MergedServer, ServerIdentity,
};
use patchbay_status::{FoundIn, Usage};
use patchbay_vault::Secret;
use serde_json::{json, Value};

/// Where to look for the clients' configs.
#[derive(Debug, Clone)]
pub struct ClientSetup {
    pub paths: ClientPaths,
    /// Project directories whose own configs count (`.mcp.json`, `.cursor/mcp.json`, ...):
    /// Claude Code's known projects are added to these.
    pub projects: Vec<PathBuf>,
}

impl ClientSetup {
    /// From the process environment (`HOME`, the clients' own variables) and the current
    /// directory. `None` without a home directory.
    pub fn from_env() -> Option<ClientSetup> {
        let paths = ClientPaths::from_env()?;
        let cwd = std::env::current_dir().ok();
        let projects = clients::default_project_dirs(&paths, cwd.as_deref());
        Some(ClientSetup { paths, projects })
    }
}

/// Where Patchbay's own gateway is reached: the default port, any port a gateway in this
/// process was bound to (`patchbay gateway serve --port N`, a test's free port), and the ports a
/// gateway on this data directory has served, recorded in [`OWN_GATEWAY_PORTS_FILE`] (the last
/// [`RECORDED_PORTS`]) so that another process (`patchbay status`, the app beside a CLI gateway)
/// knows them too. Also remembers which client entries pointing at it were said in the log, so
/// each is said once, not at every read of the catalog.
#[derive(Debug)]
pub struct OwnGateway {
    ports: RwLock<BTreeSet<u16>>,
    recorded: Option<PathBuf>,
    said: Mutex<BTreeSet<(PathBuf, String)>>,
}

/// The file in the data directory listing the ports its gateways served, one per line, the most
/// recent last.
pub const OWN_GATEWAY_PORTS_FILE: &str = "gateway-ports";

/// How many served ports are remembered: enough for a user's few `--port`s, few enough that a
/// port long given up does not stay Patchbay's for ever.
pub const RECORDED_PORTS: usize = 8;

impl Default for OwnGateway {
    fn default() -> Self {
        OwnGateway {
            ports: RwLock::new(BTreeSet::from([
                patchbay_catalog::own_gateway::DEFAULT_GATEWAY_PORT,
            ])),
            recorded: None,
            said: Mutex::default(),
        }
    }
}

impl OwnGateway {
    /// With the ports recorded in `file` (see [`OWN_GATEWAY_PORTS_FILE`]).
    pub fn recorded_in(file: PathBuf) -> OwnGateway {
        OwnGateway {
            recorded: Some(file),
            ..OwnGateway::default()
        }
    }

    /// A gateway in this process serves on `port` too; recorded for other processes (a failed
    /// write is logged: this process still knows it).
    pub fn add_port(&self, port: u16) {
        self.ports
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(port);
        let Some(file) = &self.recorded else {
            return;
        };
        let mut recorded = read_recorded_ports(file);
        if recorded.last() == Some(&port) {
            return;
        }
        recorded.retain(|p| *p != port);
        recorded.push(port);
        let keep = recorded.len().saturating_sub(RECORDED_PORTS);
        let text: String = recorded[keep..].iter().map(|p| format!("{p}\n")).collect();
        if let Err(e) = crate::user_catalog::atomic_write(file, text.as_bytes()) {
            tracing::warn!(
                "cannot record the gateway's port {port} in {}: {e}",
                file.display()
            );
        }
    }

    pub fn ports(&self) -> Vec<u16> {
        let mut ports = self.ports.read().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(file) = &self.recorded {
            ports.extend(read_recorded_ports(file));
        }
        ports.into_iter().collect()
    }

    /// Whether `url` reaches Patchbay's own gateway (see [`patchbay_catalog::own_gateway`]).
    pub fn is_own(&self, url: &str) -> bool {
        patchbay_catalog::own_gateway::is_own_gateway_url(url, &self.ports())
    }

    /// Say once per client entry why it is not a connector.
    fn say_skipped(&self, entry: &ClientServer) {
        let key = (entry.file.clone(), entry.name.clone());
        if self
            .said
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key)
        {
            tracing::info!(
                client = entry.client.display_name(),
                file = %entry.file.display(),
                server = entry.name,
                "not a connector: this entry is Patchbay's own gateway (listing it would make the gateway aggregate itself)"
            );
        }
    }
}

/// One read of every client: the servers, merged across clients.
#[derive(Debug, Default)]
pub struct ClientView {
    pub merged: Vec<MergedServer>,
    /// Files that could not be read (each hides only its own servers).
    pub errors: Vec<String>,
}

/// What a client config file looked like when it was read: its modification time and length,
/// `None` while it does not exist.
type Stamp = Vec<(PathBuf, Option<(std::time::SystemTime, u64)>)>;

fn stamp(setup: &ClientSetup) -> Stamp {
    setup
        .paths
        .files(&setup.projects)
        .into_iter()
        .map(|file| {
            let seen = std::fs::metadata(&file.path)
                .ok()
                .map(|m| (m.modified().unwrap_or(std::time::UNIX_EPOCH), m.len()));
            (file.path, seen)
        })
        .collect()
}

/// The last read of the clients' configs, kept while none of their files changed: a status
/// (and the bridges and checks around it) asks for the catalog several times, and each time
/// would otherwise read and parse every client's files again. Only metadata is read to tell.
#[derive(Debug, Default)]
pub struct ClientViewCache {
    last: std::sync::Mutex<Option<(Stamp, std::sync::Arc<ClientView>)>>,
}

impl ClientViewCache {
    pub fn get(&self, setup: &ClientSetup) -> std::sync::Arc<ClientView> {
        let now = stamp(setup);
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, view)) = last.as_ref() {
            if *seen == now {
                return view.clone();
            }
        }
        let view = std::sync::Arc::new(ClientView::read(setup));
        *last = Some((now, view.clone()));
        view
    }
}

impl ClientView {
    pub fn read(setup: &ClientSetup) -> ClientView {
        let scan = clients::read_all(&setup.paths, &setup.projects);
        ClientView {
            merged: merge(scan.servers.into_iter().filter(|s| s.enabled)),
            errors: scan.errors.iter().map(ToString::to_string).collect(),
        }
    }
}

/// The catalog with the client-only servers added, and what the status needs to know.
#[derive(Debug, Default)]
pub struct Synthesized {
    pub usage: Usage,
    /// `${VAR}` → a literal secret found in a client's config.
    pub secrets: HashMap<String, Secret>,
}

fn found_in(entry: &ClientServer) -> FoundIn {
    FoundIn {
        client: serde_json::to_value(entry.client)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        display_name: entry.client.display_name().to_owned(),
        file: entry.file.clone(),
        server_name: entry.name.clone(),
    }
}

/// Matches the clients' servers to `catalog` (adding `found_in` for those it has) and appends
/// a connector for each server no catalog entry matches. Several catalog entries on one server
/// (two accounts of one service): the one a client names, else the first in catalog order.
pub fn add_client_servers(
    catalog: &mut Catalog,
    view: &ClientView,
    own: &OwnGateway,
) -> Synthesized {
    let mut out = Synthesized::default();
    // Read once here (the recorded ports are a file), not once per client entry.
    let own_ports = own.ports();
    // The catalog's names by server identity, in catalog order: each client server finds its
    // entries in one lookup (a scan of every entry per client server grew as their product).
    let mut identities: HashMap<ServerIdentity, Vec<String>> = HashMap::new();
    for entry in catalog.servers() {
        identities
            .entry(ServerIdentity::of_catalog(entry))
            .or_default()
            .push(entry.name.as_str().to_owned());
    }
    let mut taken: BTreeSet<String> = catalog
        .items
        .iter()
        .map(|i| i.name().as_str().to_owned())
        .collect();
    for merged in &view.merged {
        // Patchbay's own entry (`patchbay connect NAME`, the gateway's `/mcp/NAME`, written by
        // "Add to ..."): the connector NAME is found there; it never becomes a connector itself.
        if let Some(target) = clients::write::patchbay_target(&merged.entries[0]) {
            if catalog.get(target.connector()).is_some() {
                let found = merged.entries.iter().map(found_in);
                let list = out
                    .usage
                    .found_in
                    .entry(target.connector().to_owned())
                    .or_default();
                list.extend(found);
            }
            continue;
        }
        // The gateway itself (its `/mcp` pasted into a client, or behind `npx mcp-remote`).
        let remote = as_remote(&merged.entries[0]);
        let url = remote
            .as_ref()
            .unwrap_or(&merged.entries[0])
            .transport
            .url();
        if url.is_some_and(|u| patchbay_catalog::own_gateway::is_own_gateway_url(u, &own_ports)) {
            merged.entries.iter().for_each(|e| own.say_skipped(e));
            continue;
        }
        let same: Vec<&String> = identities
            .get(&merged.identity)
            .map(|names| names.iter().collect())
            .unwrap_or_default();
        let client_names: BTreeSet<&str> = merged.entries.iter().map(|e| e.name.as_str()).collect();
        let chosen = same
            .iter()
            .find(|n| client_names.contains(n.as_str()))
            .or(same.first());
        let found: Vec<FoundIn> = merged.entries.iter().map(found_in).collect();
        if let Some(name) = chosen {
            out.usage
                .found_in
                .entry((*name).clone())
                .or_default()
                .extend(found);
            continue;
        }
        let first = &merged.entries[0];
        let first = remote.as_ref().unwrap_or(first);
        let converted = air::to_air(first);
        let name = unique_name(&converted.name, first, &taken);
        let doc = json!({ name.clone(): converted.entry });
        let Ok(items) = patchbay_catalog::parse(&doc.to_string(), &first.file) else {
            continue;
        };
        for secret in converted.secrets {
            out.secrets.insert(secret.variable, secret.value);
        }
        for item in items {
            taken.insert(item.name().as_str().to_owned());
            out.usage
                .client_only
                .insert(item.name().as_str().to_owned());
            out.usage
                .found_in
                .insert(item.name().as_str().to_owned(), found.clone());
            catalog.items.push(item);
        }
    }
    out
}

/// An `npx mcp-remote URL` entry as the remote server it bridges: Patchbay is the OAuth client
/// itself, so the connector is the URL (streamable HTTP, mcp-remote's first try) with the
/// `--header`s it passed, each `${VAR}` in them taken from the entry's `env` as mcp-remote would.
fn as_remote(server: &ClientServer) -> Option<ClientServer> {
    let ClientTransport::Stdio { command, args, env } = &server.transport else {
        return None;
    };
    let options = patchbay_runtimes::mcp_remote::invocation(command, args)?;
    let headers = options
        .headers
        .iter()
        .map(|(name, value)| {
            let expanded = patchbay_catalog::expand(value.expose(), &|var| {
                env.get(var).map(|v| v.expose().to_owned())
            })
            .unwrap_or_else(|_| value.expose().to_owned());
            (name.clone(), Secret::new(expanded))
        })
        .collect();
    Some(ClientServer {
        transport: ClientTransport::StreamableHttp {
            url: options.server_url.clone(),
            headers,
        },
        ..server.clone()
    })
}

/// The client's name for a server, unless a catalog entry already has it: then with the
/// client's id after it (`github-cursor`), and a number if even that is taken.
fn unique_name(base: &str, entry: &ClientServer, taken: &BTreeSet<String>) -> String {
    if !taken.contains(base) {
        return base.to_owned();
    }
    let client = serde_json::to_value(entry.client)
        .ok()
        .and_then(|v| v.as_str().map(|s| s.replace('_', "-")))
        .unwrap_or_else(|| "client".into());
    let with_client = format!("{base}-{client}");
    if !taken.contains(&with_client) {
        return with_client;
    }
    (2..)
        .map(|n| format!("{with_client}-{n}"))
        .find(|candidate| !taken.contains(candidate))
        .expect("an unused name exists")
}

/// The AIR entry "Manage with Patchbay" writes for a client-only connector, and the secrets it
/// moves into the vault. `None` when `name` is not a client-only connector.
pub fn managed_entry(
    catalog: &Catalog,
    view: &ClientView,
    name: &str,
) -> Option<(Value, Vec<(String, Secret)>)> {
    let item = catalog.get(name)?;
    let CatalogItem::Server(entry) = item else {
        return None;
    };
    let identity = ServerIdentity::of_catalog(entry);
    let merged = view.merged.iter().find(|m| m.identity == identity)?;
    let first = &merged.entries[0];
    let converted = air::to_air(&as_remote(first).unwrap_or_else(|| first.clone()));
    let secrets = converted
        .secrets
        .into_iter()
        .map(|s| (s.variable, s.value))
        .collect();
    Some((converted.entry, secrets))
}

/// The ports recorded in `file`; none when it is absent or unreadable, and lines that are no
/// port are skipped (the file is ours, but a reader must not fail on it).
fn read_recorded_ports(file: &std::path::Path) -> Vec<u16> {
    std::fs::read_to_string(file)
        .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchbay_runtimes::clients::Os;

    #[test]
    fn the_clients_are_read_again_only_when_a_file_changes() {
        let home = tempfile::tempdir().unwrap();
        let setup = ClientSetup {
            paths: ClientPaths::resolve(home.path(), Os::Linux, &|_| None),
            projects: Vec::new(),
        };
        let cache = ClientViewCache::default();
        let none = cache.get(&setup);
        assert!(none.merged.is_empty());
        assert!(std::sync::Arc::ptr_eq(&none, &cache.get(&setup)));

        let cursor = home.path().join(".cursor/mcp.json");
        std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
        std::fs::write(
            &cursor,
            r#"{"mcpServers": {"a": {"url": "http://127.0.0.1:1/mcp"}}}"#,
        )
        .unwrap();
        let one = cache.get(&setup);
        assert_eq!(one.merged.len(), 1);
        assert!(std::sync::Arc::ptr_eq(&one, &cache.get(&setup)));

        std::fs::write(
            &cursor,
            r#"{"mcpServers": {"a": {"url": "http://127.0.0.1:1/mcp"}, "b": {"url": "http://127.0.0.1:2/mcp"}}}"#,
        )
        .unwrap();
        assert_eq!(cache.get(&setup).merged.len(), 2);
    }

    #[test]
    fn a_port_one_process_serves_on_is_own_for_another_and_only_the_last_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(OWN_GATEWAY_PORTS_FILE);
        let gateway = OwnGateway::recorded_in(file.clone());
        let status = OwnGateway::recorded_in(file.clone());
        assert!(!status.is_own("http://localhost:4100/mcp"));
        gateway.add_port(4100);
        assert!(status.is_own("http://localhost:4100/mcp"));
        assert!(status.is_own("http://[::1]:4100/mcp/fx"));
        assert!(
            status.is_own("http://127.0.0.1:3119/mcp"),
            "the default stays"
        );
        assert!(!status.is_own("http://127.0.0.1:4101/mcp"));

        // A line that is no port is skipped, not a failure; the oldest ports go first.
        std::fs::write(&file, "4100\nnot a port\n").unwrap();
        for port in 5000..5000 + RECORDED_PORTS as u16 {
            gateway.add_port(port);
        }
        assert!(!OwnGateway::recorded_in(file.clone()).is_own("http://127.0.0.1:4100/mcp"));
        assert!(status.is_own("http://127.0.0.1:5000/mcp"));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap().lines().count(),
            RECORDED_PORTS
        );
        // Served again: moved to the end, not listed twice.
        gateway.add_port(5000);
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.lines().last(), Some("5000"));
        assert_eq!(text.matches("5000").count(), 1);
    }
}

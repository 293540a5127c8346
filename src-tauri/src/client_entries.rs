//! The window's "Add to Cursor / VS Code / Claude Desktop / Windsurf", "Switch CLIENT to
//! Patchbay" and "Gateway clients": what `patchbay add-to`, `patchbay switch` and `patchbay
//! gateway client list/revoke` do, over patchbay_core::client_config and
//! patchbay_gateway::Clients, answered as data the window shows (never a secret: a minted
//! gateway secret goes into the client's config file only).

use std::path::{Path, PathBuf};

use patchbay_core::client_config::{self, Change, Client, Conflict, Route, Written};
use patchbay_core::Patchbay;
use patchbay_gateway::{Clients, ClientsError, DEFAULT_PORT};
use serde::Serialize;

use crate::error::IpcError;

/// What an Add or a Switch wrote (`ClientWrite` in ui/src/types.ts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClientWrite {
    /// The client's id (`cursor`, `vscode`, `claude-desktop`, `windsurf`).
    pub client: &'static str,
    pub client_name: &'static str,
    /// The entry's name in the client's config.
    pub name: String,
    /// The connector it reaches.
    pub connector: String,
    pub file: PathBuf,
    /// `added`, `replaced` or `unchanged`.
    pub change: &'static str,
    /// The file as it was, saved by this write (the first write only).
    pub backup: Option<PathBuf>,
    /// `stdio` (`patchbay connect`) or `gateway`.
    pub via: &'static str,
    /// The gateway client minted for this write, when one was.
    pub gateway_client: Option<String>,
    /// A client-only server that is now in the user catalog (Switch).
    pub managed: bool,
}

/// The gateway's address and its clients (`GatewayClients` in ui/src/types.ts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GatewayClients {
    /// The aggregate endpoint; `/mcp/NAME` reaches one connector.
    pub url: String,
    pub port: u16,
    /// The registry (hashes only).
    pub file: PathBuf,
    pub clients: Vec<GatewayClient>,
}

/// A gateway client as the window lists it: no secret, no hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GatewayClient {
    pub label: String,
    /// The only connectors it may reach; `null`: every connector in use.
    pub only: Option<Vec<String>>,
    pub created_at: String,
}

fn gateway_error(error: ClientsError) -> IpcError {
    IpcError {
        kind: "gateway_clients",
        message: error.to_string(),
    }
}

fn parse_via(via: &str) -> Result<bool, IpcError> {
    match via {
        "stdio" => Ok(false),
        "gateway" => Ok(true),
        other => Err(IpcError {
            kind: "invalid_input",
            message: format!("via is \"stdio\" or \"gateway\", not {other:?}"),
        }),
    }
}

fn client_id(client: Client) -> &'static str {
    client_config::CLIENTS
        .iter()
        .find(|(_, c)| *c == client)
        .map(|(id, _)| *id)
        .unwrap_or("client")
}

/// How the client reaches a connector, as the CLI's `--via` decides it. For the gateway: the
/// secret the client's config already sends when it is registered and may reach the connector,
/// else one minted under the client's id (`cursor`, `cursor-2`, ...), revoked again when the
/// write does not happen.
struct Routing<'a> {
    patchbay: &'a Patchbay,
    clients: Clients,
    client: Client,
    gateway: bool,
    minted: Option<String>,
}

impl Routing<'_> {
    fn route(&mut self, connector: &str) -> Result<Route, IpcError> {
        if !self.gateway {
            return Ok(Route::Connect {
                command: client_config::current_connect_command(),
            });
        }
        let url = format!("http://127.0.0.1:{DEFAULT_PORT}/mcp/{connector}");
        let file = client_config::client_file(self.patchbay, self.client)?;
        let held = client_config::gateway_secrets(self.client, &file).map_err(|e| IpcError {
            kind: "invalid",
            message: e.to_string(),
        })?;
        for secret in held {
            let record = self
                .clients
                .authenticate(secret.expose())
                .map_err(gateway_error)?;
            if record.is_some_and(|r| r.allows(connector)) {
                return Ok(Route::gateway(url, &secret));
            }
        }
        let base = client_id(self.client);
        for n in 1..=100 {
            let label = match n {
                1 => base.to_owned(),
                n => format!("{base}-{n}"),
            };
            match self.clients.add(&label, None, self.patchbay.now()) {
                Ok((_, secret)) => {
                    self.minted = Some(label);
                    return Ok(Route::gateway(url, &secret));
                }
                Err(ClientsError::Exists(_)) => continue,
                Err(e) => return Err(gateway_error(e)),
            }
        }
        Err(IpcError {
            kind: "gateway_clients",
            message: format!("every gateway client label from {base} to {base}-100 is taken"),
        })
    }

    /// The write happened: keep what was minted, and say what the client got.
    fn done(mut self, written: Written, connector: String, managed: bool) -> ClientWrite {
        ClientWrite {
            client: client_id(written.client),
            client_name: written.client.display_name(),
            name: written.name,
            connector,
            file: written.file,
            change: match written.change {
                Change::Added => "added",
                Change::Replaced => "replaced",
                Change::Unchanged => "unchanged",
            },
            backup: written.backup,
            via: if self.gateway { "gateway" } else { "stdio" },
            gateway_client: self.minted.take(),
            managed,
        }
    }
}

impl Drop for Routing<'_> {
    fn drop(&mut self) {
        if let Some(label) = self.minted.take() {
            if let Err(error) = self.clients.revoke(&label) {
                tracing::warn!("cannot revoke the unused gateway client \"{label}\": {error}");
            }
        }
    }
}

fn routing<'a>(patchbay: &'a Patchbay, client: Client, gateway: bool) -> Routing<'a> {
    Routing {
        patchbay,
        clients: Clients::new(&patchbay.paths.data_dir),
        client,
        gateway,
        minted: None,
    }
}

/// "Add to CLIENT" for the connector `name`, via `stdio` or `gateway`. An entry of that name
/// that is not Patchbay's is refused with kind `conflict` unless `replace`.
pub fn add_to_client(
    patchbay: &Patchbay,
    client: &str,
    name: &str,
    via: &str,
    replace: bool,
) -> Result<ClientWrite, IpcError> {
    let client = client_config::parse_client(client)?;
    let mut routing = routing(patchbay, client, parse_via(via)?);
    let route = routing.route(name)?;
    let conflict = if replace {
        Conflict::Replace
    } else {
        Conflict::Refuse
    };
    match client_config::add_to_client(patchbay, client, name, route, conflict) {
        Ok(written) => Ok(routing.done(written, name.to_owned(), false)),
        Err(error) => {
            let mut error = IpcError::from(error);
            let foreign = || {
                client_config::client_file(patchbay, client)
                    .is_ok_and(|file| client_config::has_foreign_entry(client, &file, name))
            };
            if !replace && foreign() {
                error.kind = "conflict";
            }
            Err(error)
        }
    }
}

/// "Switch CLIENT to Patchbay": its `npx mcp-remote URL` entry `server` now runs `patchbay
/// connect` for the connector with that URL (stdio, as mcp-remote was).
pub fn switch_client_entry(
    patchbay: &Patchbay,
    client: &str,
    server: &str,
) -> Result<ClientWrite, IpcError> {
    let client = client_config::parse_client(client)?;
    let mut routing = routing(patchbay, client, false);
    let switched = client_config::switch_to_patchbay(patchbay, client, server, |name| {
        routing
            .route(name)
            .map_err(|e| patchbay_core::CoreError::Invalid(e.message))
    })?;
    Ok(routing.done(switched.written, switched.connector, switched.managed))
}

/// The gateway's clients, newest last.
pub fn gateway_clients(patchbay: &Patchbay) -> Result<GatewayClients, IpcError> {
    gateway_clients_in(&patchbay.paths.data_dir)
}

fn gateway_clients_in(data_dir: &Path) -> Result<GatewayClients, IpcError> {
    let clients = Clients::new(data_dir);
    let list = clients.list().map_err(gateway_error)?;
    Ok(GatewayClients {
        url: format!("http://127.0.0.1:{DEFAULT_PORT}/mcp"),
        port: DEFAULT_PORT,
        file: clients.path().to_path_buf(),
        clients: list
            .into_iter()
            .map(|c| GatewayClient {
                label: c.label,
                only: c.only,
                created_at: c.created_at.to_rfc3339(),
            })
            .collect(),
    })
}

/// Revoke the gateway client `label` (its secret stops working at the gateway's next
/// request), then answer the list.
pub fn revoke_gateway_client(patchbay: &Patchbay, label: &str) -> Result<GatewayClients, IpcError> {
    revoke_in(&patchbay.paths.data_dir, label)
}

fn revoke_in(data_dir: &Path, label: &str) -> Result<GatewayClients, IpcError> {
    Clients::new(data_dir)
        .revoke(label)
        .map_err(gateway_error)?;
    gateway_clients_in(data_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_gets_labels_limits_and_times_but_no_secret_or_hash() {
        let dir = std::env::temp_dir().join(format!("patchbay-app-gw-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir); // a run that failed before left it
        let clients = Clients::new(&dir);
        // A fixed time of the type the registry takes (chrono is not this crate's dependency).
        let now = serde_json::from_value::<patchbay_gateway::ClientRecord>(serde_json::json!({
            "label": "t", "secret_sha256": "00", "created_at": "2026-12-01T10:00:00Z"
        }))
        .unwrap()
        .created_at;
        let (_, secret) = clients.add("cursor", None, now).unwrap();
        let (limited, _) = clients
            .add("ci-runner", Some(vec!["linear".into()]), now)
            .unwrap();

        let listed = gateway_clients_in(&dir).unwrap();
        assert_eq!(listed.url, format!("http://127.0.0.1:{DEFAULT_PORT}/mcp"));
        let json = serde_json::to_string(&listed).unwrap();
        assert!(!json.contains(secret.expose()), "{json}");
        assert!(!json.contains(&limited.secret_sha256), "{json}");
        let labels: Vec<_> = listed.clients.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["cursor", "ci-runner"]);
        assert_eq!(listed.clients[1].only, Some(vec!["linear".to_owned()]));
        assert_eq!(listed.clients[1].created_at, now.to_rfc3339());

        let after = revoke_in(&dir, "cursor").unwrap();
        assert_eq!(after.clients.len(), 1);
        assert!(clients.authenticate(secret.expose()).unwrap().is_none());
        let error = revoke_in(&dir, "cursor").unwrap_err();
        assert_eq!(error.kind, "gateway_clients");
        assert!(error.message.contains("cursor"), "{}", error.message);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn via_is_stdio_or_gateway() {
        assert!(!parse_via("stdio").unwrap());
        assert!(parse_via("gateway").unwrap());
        assert_eq!(parse_via("http").unwrap_err().kind, "invalid_input");
    }
}

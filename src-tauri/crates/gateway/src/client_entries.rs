//! "Add to CLIENT" (Claude Code, Codex, Gemini CLI, Cursor, VS Code, Claude Desktop, Windsurf), "Switch CLIENT to Patchbay" and the
//! gateway's client list, for the CLI (`patchbay add-to`, `switch`, `gateway client list/revoke`)
//! and the window alike: how a client reaches a connector (`patchbay connect`, or the gateway
//! with a secret of its own), written through `patchbay_core::client_config`, answered as data
//! that never holds a secret (a minted gateway secret goes into the client's config file only).
//! Here rather than in the core because the core does not depend on the gateway's registry.

use std::path::{Path, PathBuf};

use std::sync::Mutex;

use patchbay_core::client_config::{
    self, Change, Client, Conflict, Route, Undo, WritePlan, Written,
};
use patchbay_core::{CoreError, Patchbay};
use serde::Serialize;

use crate::{Clients, ClientsError};

/// How the client reaches the connector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// The client launches `patchbay connect NAME` by its absolute path (every client, Claude
    /// Desktop too; works whether or not the app runs).
    Stdio,
    /// The client connects to the gateway's `/mcp/NAME` with its own secret.
    Gateway,
}

impl std::str::FromStr for Via {
    type Err = EntryError;
    fn from_str(text: &str) -> Result<Via, EntryError> {
        match text {
            "stdio" => Ok(Via::Stdio),
            "gateway" => Ok(Via::Gateway),
            other => Err(EntryError::Via(other.to_owned())),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error("the gateway's clients: {0}")]
    Clients(#[from] ClientsError),
    /// An entry of that name exists in the client's config and is not Patchbay's.
    #[error("{0}")]
    Conflict(String),
    #[error("every gateway client label from {0} to {0}-100 is taken")]
    LabelsTaken(String),
    #[error("via is \"stdio\" or \"gateway\", not {0:?}")]
    Via(String),
    /// The write is not one this run can undo (too old, or undone already).
    #[error(
        "that change can no longer be undone (undone already, or older than the last {} changes)",
        UndoLog::KEPT
    )]
    NoUndo(u64),
}

/// A failed Add or Switch as the Connectors window receives it (`conflict` offers Replace).
impl From<EntryError> for patchbay_core::IpcError {
    fn from(error: EntryError) -> patchbay_core::IpcError {
        use patchbay_core::ErrorKind;
        let kind = match error {
            EntryError::Core(core) => return core.into(),
            EntryError::Conflict(_) => ErrorKind::Conflict,
            EntryError::Clients(_) | EntryError::LabelsTaken(_) => ErrorKind::GatewayClients,
            EntryError::Via(_) | EntryError::NoUndo(_) => ErrorKind::InvalidInput,
        };
        patchbay_core::IpcError::new(kind, error.to_string())
    }
}

/// What an Add or a Switch wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
    pub via: Via,
    /// The gateway client minted for this write, when one was.
    pub gateway_client: Option<String>,
    /// A client-only server that is now in the user catalog (Switch).
    pub managed: bool,
    /// What the window's Undo names to put the file back ([`UndoLog::keep`] sets it).
    pub undo_id: Option<u64>,
    /// What is wrong with the entry's command: no installed `patchbay` was found
    /// ([`client_config::connect_warning`]).
    pub warning: Option<String>,
    /// The file's texts before and after, for [`UndoLog::keep`]: never sent.
    #[serde(skip)]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub undo: Option<Undo>,
}

/// What an Add or a Switch would write, shown for confirmation before it is done: the entry as
/// the file holds it and as it would be, with no value of a header, variable or credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct WritePreview {
    pub client: &'static str,
    pub client_name: &'static str,
    /// The entry's name in the client's config.
    pub name: String,
    /// The connector it would reach.
    pub connector: String,
    pub file: PathBuf,
    /// The entry now, in the file's syntax; `null` when there is none.
    pub before: Option<String>,
    /// The entry after the write.
    pub after: String,
    /// `added`, `replaced` or `unchanged`.
    pub change: &'static str,
    pub via: Via,
    /// What to know before confirming ([`WritePlan::warnings`], in one paragraph): the
    /// connector is not ready in Patchbay, no installed `patchbay` for the entry to run.
    pub warning: Option<String>,
}

impl WritePreview {
    fn new(plan: WritePlan, via: Via) -> WritePreview {
        let preview = plan.entry;
        WritePreview {
            client: client_id(preview.client),
            client_name: preview.client.display_name(),
            name: preview.name,
            connector: plan.connector,
            file: preview.file,
            before: preview.before,
            after: preview.after,
            change: change_id(preview.change),
            via,
            warning: (!plan.warnings.is_empty()).then(|| plan.warnings.join(" ")),
        }
    }
}

fn change_id(change: Change) -> &'static str {
    match change {
        Change::Added => "added",
        Change::Replaced => "replaced",
        Change::Unchanged => "unchanged",
    }
}

/// What an Undo put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct WriteUndone {
    pub client: &'static str,
    pub client_name: &'static str,
    pub file: PathBuf,
    /// The gateway client the write had minted, revoked again (its secret is in no file now).
    pub revoked: Option<String>,
}

/// The writes of this run that the window can still undo, the newest last (at most
/// [`UndoLog::KEPT`]). In memory only: the texts hold the client's literal API keys, and an
/// Undo is offered in the notice of the write it undoes, not across restarts.
#[derive(Debug, Default)]
pub struct UndoLog {
    kept: Mutex<KeptUndos>,
}

#[derive(Debug, Default)]
struct KeptUndos {
    /// The last id given: ids are never reused, so an old notice's Undo cannot undo a new write.
    last_id: u64,
    list: Vec<KeptUndo>,
}

#[derive(Debug)]
struct KeptUndo {
    id: u64,
    undo: Undo,
    minted: Option<String>,
}

impl UndoLog {
    pub const KEPT: usize = 16;

    /// Keeps `write`'s undo and answers it with the id the window's Undo names.
    pub fn keep(&self, mut write: ClientWrite) -> ClientWrite {
        let Some(undo) = write.undo.take() else {
            return write;
        };
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.last_id += 1;
        let id = kept.last_id;
        kept.list.push(KeptUndo {
            id,
            undo,
            minted: write.gateway_client.clone(),
        });
        if kept.list.len() > Self::KEPT {
            kept.list.remove(0);
        }
        write.undo_id = Some(id);
        write
    }

    /// Undoes the write `id`: the client's file as it was before it, byte for byte, and the
    /// gateway client it minted revoked. Refused, nothing touched, when the file has changed
    /// since (the undo is then dropped: it can never apply again).
    pub fn undo(&self, patchbay: &Patchbay, id: u64) -> Result<WriteUndone, EntryError> {
        let kept = {
            let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
            let at = kept
                .list
                .iter()
                .position(|k| k.id == id)
                .ok_or(EntryError::NoUndo(id))?;
            kept.list.remove(at)
        };
        client_config::undo_write(&kept.undo)?;
        let revoked = kept.minted.filter(|label| {
            Clients::new(&patchbay.paths.data_dir)
                .revoke(label)
                .map_err(|e| tracing::warn!("cannot revoke the gateway client \"{label}\": {e}"))
                .is_ok()
        });
        Ok(WriteUndone {
            client: client_id(kept.undo.client),
            client_name: kept.undo.client.display_name(),
            file: kept.undo.file,
            revoked,
        })
    }
}

/// The gateway's address and its clients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct GatewayClients {
    /// The aggregate endpoint; `/mcp/NAME` reaches one connector.
    pub url: String,
    pub port: u16,
    /// The registry (hashes only).
    pub file: PathBuf,
    pub clients: Vec<GatewayClient>,
}

/// A gateway client as it is listed: no secret, no hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct GatewayClient {
    pub label: String,
    /// The only connectors it may reach; `null`: every connector in use.
    pub only: Option<Vec<String>>,
    pub created_at: String,
}

/// The client's id as the CLI and the window name it.
pub fn client_id(client: Client) -> &'static str {
    client_config::CLIENTS
        .iter()
        .find(|(_, c)| *c == client)
        .map(|(id, _)| *id)
        .unwrap_or("client")
}

/// How a client reaches a connector. For the gateway: the secret the client's config already
/// sends when it is registered and may reach the connector, else one minted under the client's
/// id (`cursor`, `cursor-2`, ...), revoked again when dropped before [`Routing::done`] (a write
/// that did not happen leaves no secret registered).
struct Routing<'a> {
    patchbay: &'a Patchbay,
    clients: Clients,
    client: Client,
    via: Via,
    port: u16,
    minted: Option<String>,
    /// [`Route::warning`] of the last route given.
    warning: Option<&'static str>,
}

impl<'a> Routing<'a> {
    fn new(patchbay: &'a Patchbay, client: Client, via: Via, port: u16) -> Routing<'a> {
        Routing {
            patchbay,
            clients: Clients::new(&patchbay.paths.data_dir),
            client,
            via,
            port,
            minted: None,
            warning: None,
        }
    }

    /// The route [`Routing::route`] would give, minting nothing: for a preview, which shows no
    /// header value anyway.
    fn preview_route(&self, connector: &str) -> Route {
        match self.via {
            Via::Stdio => Route::connect(self.patchbay),
            Via::Gateway => Route::gateway(
                self.connector_url(connector),
                &patchbay_vault::Secret::new("its own secret"),
            ),
        }
    }

    /// The gateway's `/mcp/NAME` for `connector`.
    fn connector_url(&self, connector: &str) -> String {
        format!("http://127.0.0.1:{}/mcp/{connector}", self.port)
    }

    fn route(&mut self, connector: &str) -> Result<Route, EntryError> {
        let route = self.route_minting(connector)?;
        self.warning = route.warning();
        Ok(route)
    }

    /// [`Routing::route`]: for the gateway, the client's secret, minted when it has none.
    fn route_minting(&mut self, connector: &str) -> Result<Route, EntryError> {
        if self.via == Via::Stdio {
            return Ok(Route::connect(self.patchbay));
        }
        let url = self.connector_url(connector);
        let file = client_config::client_file(self.patchbay, self.client)?;
        let held =
            client_config::gateway_secrets(self.client, &file).map_err(CoreError::ClientConfig)?;
        for secret in held {
            let record = self.clients.authenticate(secret.expose())?;
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
                Err(e) => return Err(e.into()),
            }
        }
        Err(EntryError::LabelsTaken(base.to_owned()))
    }

    /// The write happened: keep what was minted, and say what the client got.
    fn done(mut self, written: Written, connector: String, managed: bool) -> ClientWrite {
        ClientWrite {
            client: client_id(written.client),
            client_name: written.client.display_name(),
            name: written.name,
            connector,
            file: written.file,
            change: change_id(written.change),
            backup: written.backup,
            via: self.via,
            gateway_client: self.minted.take(),
            managed,
            undo_id: None,
            warning: self.warning.take().map(str::to_owned),
            undo: written.undo,
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

/// "Add to CLIENT" for the connector `name`. An entry of that name that is not Patchbay's is
/// [`EntryError::Conflict`] unless `replace`.
pub fn add_to_client(
    patchbay: &Patchbay,
    client: Client,
    name: &str,
    via: Via,
    port: u16,
    replace: bool,
) -> Result<ClientWrite, EntryError> {
    let mut routing = Routing::new(patchbay, client, via, port);
    let route = routing.route(name)?;
    let conflict = if replace {
        Conflict::Replace
    } else {
        Conflict::Refuse
    };
    match client_config::add_to_client(patchbay, client, name, route, conflict) {
        Ok(written) => Ok(routing.done(written, name.to_owned(), false)),
        Err(error) => {
            let foreign = || {
                client_config::client_file(patchbay, client)
                    .is_ok_and(|file| client_config::has_foreign_entry(client, &file, name))
            };
            Err(if !replace && foreign() {
                EntryError::Conflict(error.to_string())
            } else {
                error.into()
            })
        }
    }
}

/// "Switch CLIENT to Patchbay": its `npx mcp-remote URL` entry `server` now reaches the
/// connector with that URL through Patchbay.
pub fn switch_client_entry(
    patchbay: &Patchbay,
    client: Client,
    server: &str,
    via: Via,
    port: u16,
) -> Result<ClientWrite, EntryError> {
    let mut routing = Routing::new(patchbay, client, via, port);
    let mut route_error = None;
    let switched = client_config::switch_to_patchbay(patchbay, client, server, |name| {
        routing.route(name).map_err(|e| {
            let why = e.to_string();
            route_error = Some(e);
            CoreError::Refused {
                connector: name.to_owned(),
                why,
            }
        })
    });
    let switched = match (switched, route_error) {
        (Err(_), Some(e)) => return Err(e),
        (result, _) => result?,
    };
    Ok(routing.done(switched.written, switched.connector, switched.managed))
}

/// What [`add_to_client`] would write, for the window's confirmation; writes and mints nothing.
pub fn preview_add_to_client(
    patchbay: &Patchbay,
    client: Client,
    name: &str,
    via: Via,
    port: u16,
    replace: bool,
) -> Result<WritePreview, EntryError> {
    let route = Routing::new(patchbay, client, via, port).preview_route(name);
    let conflict = if replace {
        Conflict::Replace
    } else {
        Conflict::Refuse
    };
    let plan = client_config::preview_add_to_client(patchbay, client, name, route, conflict)?;
    Ok(WritePreview::new(plan, via))
}

/// What [`switch_client_entry`] would write, for the window's confirmation; writes, manages and
/// mints nothing.
pub fn preview_switch_client_entry(
    patchbay: &Patchbay,
    client: Client,
    server: &str,
    via: Via,
    port: u16,
) -> Result<WritePreview, EntryError> {
    let routing = Routing::new(patchbay, client, via, port);
    let plan = client_config::preview_switch(patchbay, client, server, |name| {
        Ok(routing.preview_route(name))
    })?;
    Ok(WritePreview::new(plan, via))
}

/// The gateway's clients, oldest first.
pub fn gateway_clients(data_dir: &Path, port: u16) -> Result<GatewayClients, EntryError> {
    let clients = Clients::new(data_dir);
    let list = clients.list()?;
    Ok(GatewayClients {
        url: format!("http://127.0.0.1:{port}/mcp"),
        port,
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

/// Revoke the gateway client `label` (its secret stops working at the gateway's next request),
/// then answer the list.
pub fn revoke_gateway_client(
    data_dir: &Path,
    label: &str,
    port: u16,
) -> Result<GatewayClients, EntryError> {
    Clients::new(data_dir).revoke(label)?;
    gateway_clients(data_dir, port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_has_labels_limits_and_times_but_no_secret_or_hash() {
        let dir = tempfile::tempdir().unwrap();
        let clients = Clients::new(dir.path());
        let now = chrono::Utc::now();
        let (_, secret) = clients.add("cursor", None, now).unwrap();
        let (limited, _) = clients
            .add("ci-runner", Some(vec!["linear".into()]), now)
            .unwrap();

        let listed = gateway_clients(dir.path(), crate::DEFAULT_PORT).unwrap();
        assert_eq!(
            listed.url,
            format!("http://127.0.0.1:{}/mcp", crate::DEFAULT_PORT)
        );
        let json = serde_json::to_string(&listed).unwrap();
        assert!(!json.contains(secret.expose()), "{json}");
        assert!(!json.contains(&limited.secret_sha256), "{json}");
        let labels: Vec<_> = listed.clients.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["cursor", "ci-runner"]);
        assert_eq!(listed.clients[1].only, Some(vec!["linear".to_owned()]));

        let after = revoke_gateway_client(dir.path(), "cursor", crate::DEFAULT_PORT).unwrap();
        assert_eq!(after.clients.len(), 1);
        assert!(clients.authenticate(secret.expose()).unwrap().is_none());
        let error = revoke_gateway_client(dir.path(), "cursor", crate::DEFAULT_PORT).unwrap_err();
        assert!(matches!(error, EntryError::Clients(_)), "{error:?}");
        assert!(error.to_string().contains("cursor"), "{error}");
    }

    #[test]
    fn via_is_stdio_or_gateway() {
        assert_eq!("stdio".parse::<Via>().unwrap(), Via::Stdio);
        assert_eq!("gateway".parse::<Via>().unwrap(), Via::Gateway);
        assert!(matches!("http".parse::<Via>(), Err(EntryError::Via(_))));
    }
}

//! The commands the Connectors window may invoke (and nothing else: see build.rs and
//! capabilities/). Each is one call into patchbay-core. They are async so that they run off the
//! main thread, which the tray and the webview need.

use crate::{error::IpcError, AppState};
use patchbay_catalog::CredentialKey;
use patchbay_core::client_config;
use patchbay_core::{ConnectorCheck, HealthBoard, StartOptions, Started};
use patchbay_gateway::client_entries::{
    self, ClientWrite, GatewayClients, Via, WritePreview, WriteUndone,
};
use patchbay_gateway::DEFAULT_PORT;
use patchbay_status::StatusReport;
use tauri::State;

/// The status of every connector (docs/status-json.md).
#[tauri::command]
pub async fn get_status(state: State<'_, AppState>) -> Result<StatusReport, IpcError> {
    Ok(state.status())
}

/// Delete a credential no catalog entry claims, then answer the new status.
#[tauri::command]
pub async fn delete_unclaimed_credential(
    state: State<'_, AppState>,
    credential_key: String,
) -> Result<StatusReport, IpcError> {
    state
        .core()
        .delete_unclaimed(&CredentialKey(credential_key))?;
    Ok(state.refresh())
}

/// Start authorizing a catalog connector: the consent page opens in the system browser; the
/// answer says how the flow finishes (the receiver, or a paste into `complete_authorization`).
#[tauri::command]
pub async fn start_authorization(
    state: State<'_, AppState>,
    name: String,
) -> Result<Started, IpcError> {
    Ok(state
        .authorizer()
        .start(&name, StartOptions::in_browser())
        .await?)
}

/// Cancel authorizing a connector: its pending flows end, the receiver stops when nothing else
/// waits on it; then answer the new status.
#[tauri::command]
pub async fn cancel_authorization(
    state: State<'_, AppState>,
    name: String,
) -> Result<StatusReport, IpcError> {
    state.authorizer().cancel(&name).await?;
    Ok(state.refresh())
}

/// Open the consent page of a connector's pending authorization again, in the system browser.
#[tauri::command]
pub async fn reopen_authorization(
    state: State<'_, AppState>,
    name: String,
) -> Result<(), IpcError> {
    Ok(state.authorizer().reopen(&name)?)
}

/// Keep the OAuth client the user made at a provider that offers no way to register Patchbay
/// (after `start_authorization` failed with `client_needed`), then start authorizing with it.
/// An empty secret is a public client's.
#[tauri::command]
pub async fn enter_client(
    state: State<'_, AppState>,
    name: String,
    client_id: String,
    client_secret: patchbay_vault::Secret,
) -> Result<Started, IpcError> {
    state
        .authorizer()
        .enter_client(&name, &client_id, Some(client_secret))?;
    Ok(state
        .authorizer()
        .start(&name, StartOptions::in_browser())
        .await?)
}

/// Store a key the connector's entry uses (`${VARIABLE}`) in the vault, from the row's masked
/// field; then answer the new status. The value is never sent back.
#[tauri::command]
pub async fn set_connector_key(
    state: State<'_, AppState>,
    name: String,
    variable: String,
    value: patchbay_vault::Secret,
) -> Result<StatusReport, IpcError> {
    state.core().set_connector_key(&name, &variable, &value)?;
    Ok(state.refresh())
}

/// "Add custom connector": the form's server into the user catalog, in use, its secret values
/// into the vault; then answer the new status.
#[tauri::command]
pub async fn add_custom_connector(
    state: State<'_, AppState>,
    spec: patchbay_core::custom::CustomConnector,
) -> Result<StatusReport, IpcError> {
    state.core().add_custom_connector(&spec)?;
    Ok(state.refresh())
}

/// The form's "Check": one request to `url` to learn whether it wants OAuth.
#[tauri::command]
pub async fn probe_remote_url(url: String) -> Result<patchbay_core::custom::RemoteAuth, IpcError> {
    Ok(patchbay_core::custom::probe_remote(&url).await?)
}

/// Remove a key the connector's entry uses from the vault; then answer the new status.
#[tauri::command]
pub async fn clear_connector_key(
    state: State<'_, AppState>,
    name: String,
    variable: String,
) -> Result<StatusReport, IpcError> {
    state.core().clear_connector_key(&name, &variable)?;
    Ok(state.refresh())
}

/// "Add to Claude Code" / "Add to Codex": configure the connector in the runtime
/// (`claude_code`, `codex`), write its credential through, then answer the new status.
#[tauri::command]
pub async fn add_to_runtime(
    state: State<'_, AppState>,
    name: String,
    runtime: String,
) -> Result<StatusReport, IpcError> {
    Ok(state.bridges().add_to_runtime(&name, &runtime)?)
}

/// Finish a paste-back flow from the redirected address (or the bare code), then answer the new
/// status.
#[tauri::command]
pub async fn complete_authorization(
    state: State<'_, AppState>,
    name: String,
    pasted: String,
) -> Result<StatusReport, IpcError> {
    state.authorizer().complete_pasted(&name, &pasted).await?;
    Ok(state.refresh())
}

/// Refresh the connector's credential now (the row's "Refresh now"), then answer the new
/// status, whose `refresh_history` tells how it went.
#[tauri::command]
pub async fn refresh_connector(
    state: State<'_, AppState>,
    name: String,
) -> Result<StatusReport, IpcError> {
    state.refresher().refresh(&name).await?;
    Ok(state.refresh())
}

/// Disconnect: revoke at the server where it can, remove the credential from the vault and every
/// runtime, forget the registration when asked; then answer the new status.
#[tauri::command]
pub async fn disconnect_connector(
    state: State<'_, AppState>,
    name: String,
    forget_registration: bool,
) -> Result<StatusReport, IpcError> {
    state
        .refresher()
        .disconnect(&name, forget_registration)
        .await?;
    Ok(state.refresh())
}

/// The row's Test button: a real MCP handshake with the stored credential (initialize, then
/// tools/list), recorded on the health board; then the window's status and board are refreshed.
#[tauri::command]
pub async fn check_connector(
    state: State<'_, AppState>,
    name: String,
) -> Result<ConnectorCheck, IpcError> {
    let check = state.checker().check(&name).await?;
    state.refresh();
    Ok(check)
}

/// Every connector's check history: calls, failure rate, p50/p95 latency, last error, tools.
#[tauri::command]
pub async fn get_health_board(state: State<'_, AppState>) -> Result<HealthBoard, IpcError> {
    Ok(state.checker().board()?)
}

/// Save the HTTP transport a check fell back to (`streamable-http`, `sse`) to the user catalog.
#[tauri::command]
pub async fn write_back_transport(
    state: State<'_, AppState>,
    name: String,
    transport: String,
) -> Result<StatusReport, IpcError> {
    state.checker().write_back_named(&name, &transport)?;
    Ok(state.refresh())
}

/// The gallery's "Add": put a catalog entry in use (`"enabled": true` in the user catalog; a
/// client-only server is managed instead), then answer the new status.
#[tauri::command]
pub async fn enable_connector(
    state: State<'_, AppState>,
    name: String,
) -> Result<StatusReport, IpcError> {
    state.core().enable(&name)?;
    Ok(state.refresh())
}

/// "Remove from my connectors": write `"enabled": false` for it into the user catalog, then
/// answer the new status (it is back in the gallery, hidden).
#[tauri::command]
pub async fn disable_connector(
    state: State<'_, AppState>,
    name: String,
) -> Result<StatusReport, IpcError> {
    state.core().disable(&name)?;
    Ok(state.refresh())
}

/// "Manage with Patchbay": copy a server only a client configures into the user catalog in AIR
/// form (literal secrets into the vault as `${VAR}`s), then answer the new status.
#[tauri::command]
pub async fn manage_connector(
    state: State<'_, AppState>,
    name: String,
) -> Result<StatusReport, IpcError> {
    state.core().manage(&name)?;
    Ok(state.refresh())
}

/// The clients "Add to" writes (Cursor, VS Code, Claude Desktop, Windsurf), each with whether it
/// is on this machine and whether it speaks HTTP (the gateway).
#[tauri::command]
pub async fn client_targets(
    state: State<'_, AppState>,
) -> Result<Vec<client_config::ClientTarget>, IpcError> {
    Ok(client_config::client_targets(state.core())?)
}

/// "Add to CLIENT": the connector `name` into the client's config, via `stdio` (`patchbay
/// connect`) or `gateway` (a minted client secret); a foreign entry of that name is refused
/// (kind `conflict`) unless `replace`.
#[tauri::command]
pub async fn add_to_client(
    state: State<'_, AppState>,
    client: String,
    name: String,
    via: String,
    replace: bool,
) -> Result<ClientWrite, IpcError> {
    let client = client_config::parse_client(&client)?;
    Ok(state.undos.keep(client_entries::add_to_client(
        state.core(),
        client,
        &name,
        via.parse()?,
        DEFAULT_PORT,
        replace,
    )?))
}

/// What `add_to_client` would write (the entry before and after, no secret), for the window's
/// confirmation; writes and mints nothing.
#[tauri::command]
pub async fn preview_add_to_client(
    state: State<'_, AppState>,
    client: String,
    name: String,
    via: String,
    replace: bool,
) -> Result<WritePreview, IpcError> {
    let client = client_config::parse_client(&client)?;
    Ok(client_entries::preview_add_to_client(
        state.core(),
        client,
        &name,
        via.parse()?,
        DEFAULT_PORT,
        replace,
    )?)
}

/// What `switch_client_entry` would write, for the window's confirmation.
#[tauri::command]
pub async fn preview_switch_client_entry(
    state: State<'_, AppState>,
    client: String,
    server: String,
) -> Result<WritePreview, IpcError> {
    let client = client_config::parse_client(&client)?;
    Ok(client_entries::preview_switch_client_entry(
        state.core(),
        client,
        &server,
        Via::Stdio,
        DEFAULT_PORT,
    )?)
}

/// The Undo in an Add's or a Switch's notice: the client's file as it was before it.
#[tauri::command]
pub async fn undo_client_write(
    state: State<'_, AppState>,
    id: u64,
) -> Result<WriteUndone, IpcError> {
    Ok(state.undos.undo(state.core(), id)?)
}

/// "Switch CLIENT to Patchbay": the client's `npx mcp-remote URL` entry `server` runs
/// `patchbay connect` instead.
#[tauri::command]
pub async fn switch_client_entry(
    state: State<'_, AppState>,
    client: String,
    server: String,
) -> Result<ClientWrite, IpcError> {
    let client = client_config::parse_client(&client)?;
    Ok(state.undos.keep(client_entries::switch_client_entry(
        state.core(),
        client,
        &server,
        Via::Stdio,
        DEFAULT_PORT,
    )?))
}

/// The `npx mcp-remote URL` entries of the clients that can be switched, and the connector each
/// reaches.
#[tauri::command]
pub async fn switch_candidates(
    state: State<'_, AppState>,
) -> Result<Vec<client_config::SwitchCandidate>, IpcError> {
    Ok(client_config::switch_candidates(state.core())?)
}

/// The gateway's URL and its clients (labels, limits, when created; never a secret).
#[tauri::command]
pub async fn gateway_clients(state: State<'_, AppState>) -> Result<GatewayClients, IpcError> {
    Ok(client_entries::gateway_clients(
        &state.core().paths.data_dir,
        DEFAULT_PORT,
    )?)
}

/// Revoke a gateway client: its secret stops working; answers the list.
#[tauri::command]
pub async fn revoke_gateway_client(
    state: State<'_, AppState>,
    label: String,
) -> Result<GatewayClients, IpcError> {
    Ok(client_entries::revoke_gateway_client(
        &state.core().paths.data_dir,
        &label,
        DEFAULT_PORT,
    )?)
}

/// The gateway's consents waiting for an answer, the oldest first (none while it is off).
#[tauri::command]
pub async fn consent_requests(
    state: State<'_, AppState>,
) -> Result<Vec<patchbay_gateway::ConsentRequest>, IpcError> {
    Ok(state
        .consent_desk
        .get()
        .map(|desk| desk.requests())
        .unwrap_or_default())
}

/// Allow (every connector in use, or the one asked for) or deny a waiting consent; its page
/// then sends the browser on to the client. Answers the list.
#[tauri::command]
pub async fn answer_consent(
    state: State<'_, AppState>,
    id: String,
    allow: bool,
) -> Result<Vec<patchbay_gateway::ConsentRequest>, IpcError> {
    let desk = state
        .consent_desk
        .get()
        .ok_or(patchbay_gateway::ConsentDeskError::Gone)?;
    desk.answer(&id, allow)?;
    Ok(desk.requests())
}

/// Whether Patchbay starts at login (the window's setting; off by default).
#[tauri::command]
pub async fn get_launch_at_login() -> Result<bool, IpcError> {
    Ok(patchbay_core::autostart::login_item_enabled()?)
}

/// Start at login (in the tray, no window) or not; answers the setting as it now is.
#[tauri::command]
pub async fn set_launch_at_login(enabled: bool) -> Result<bool, IpcError> {
    Ok(patchbay_core::autostart::set_login_item(enabled)?)
}

/// The window's page has registered its event listeners: row requests (focus, authorize, ask)
/// are sent as events from now on; answers those that came before, in order.
#[tauri::command]
pub async fn page_listening() -> Vec<patchbay_core::tray_model::QueuedRowRequest> {
    crate::window::page_listening()
}

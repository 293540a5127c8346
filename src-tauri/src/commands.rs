//! The commands the Connectors window may invoke (and nothing else: see build.rs and
//! capabilities/). Each is one call into patchbay-core. They are async so that they run off the
//! main thread, which the tray and the webview need.

use crate::{error::IpcError, AppState};
use patchbay_catalog::CredentialKey;
use patchbay_core::{ConnectorCheck, HealthBoard, StartOptions, Started};
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
    let open_browser = StartOptions { open_browser: true };
    Ok(state.authorizer().start(&name, open_browser).await?)
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

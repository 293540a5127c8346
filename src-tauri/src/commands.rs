//! The commands the Connectors window may invoke (and nothing else: see build.rs and
//! capabilities/). Each is one call into patchbay-core. They are async so that they run off the
//! main thread, which the tray and the webview need.

use crate::{error::IpcError, AppState};
use patchbay_catalog::CredentialKey;
use patchbay_status::StatusReport;
use tauri::State;

/// What `start_authorization` answers until the OAuth flow lands.
pub const AUTHORIZE_NOT_AVAILABLE: &str = "This build of Patchbay shows status only: running the consent flow from here is not built yet.";

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

/// Start authorizing a connector: not available yet.
#[tauri::command]
pub async fn start_authorization(name: String) -> Result<(), IpcError> {
    let _ = name;
    Err(IpcError::new("not_available", AUTHORIZE_NOT_AVAILABLE))
}

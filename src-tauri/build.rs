//! Build script: reads the app's one config (tauri.conf.json, beside Cargo.toml, where the Tauri
//! CLI that scripts/package.sh runs looks for it) and generates the app's permissions, one
//! `allow-<command>` per command; only those commands can be invoked, and only by the windows
//! that capabilities/ grant them to.

fn main() {
    let attributes = tauri_build::Attributes::new()
        .config_path("tauri.conf.json")
        .app_manifest(tauri_build::AppManifest::new().commands(&[
            "get_status",
            "delete_unclaimed_credential",
            "start_authorization",
            "complete_authorization",
            "enter_client",
            "cancel_authorization",
            "reopen_authorization",
            "set_connector_key",
            "clear_connector_key",
            "add_custom_connector",
            "probe_remote_url",
            "add_to_runtime",
            "refresh_connector",
            "disconnect_connector",
            "check_connector",
            "get_health_board",
            "write_back_transport",
            "enable_connector",
            "disable_connector",
            "manage_connector",
            "client_targets",
            "add_to_client",
            "switch_client_entry",
            "switch_candidates",
            "preview_add_to_client",
            "preview_switch_client_entry",
            "undo_client_write",
            "gateway_clients",
            "revoke_gateway_client",
            "consent_requests",
            "answer_consent",
            "get_launch_at_login",
            "set_launch_at_login",
            "page_listening",
        ]));
    if let Err(error) = tauri_build::try_build(attributes) {
        panic!("tauri-build failed: {error:#}");
    }
}

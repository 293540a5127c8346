//! The Connectors window, created on demand (a tray app opens no window at startup) and shown,
//! unminimized and focused when it already exists.

use tauri::{AppHandle, Emitter, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

pub const LABEL: &str = "connectors";
pub const TITLE: &str = "Patchbay — Connectors";
/// The event that asks the window to scroll to and highlight one connector; payload: its name.
pub const FOCUS_EVENT: &str = "focus-connector";

/// Show the Connectors window, optionally focused on one connector. A window created for a
/// connector also gets it as `?focus=<name>` in its URL, since it cannot have listened yet.
pub fn show_connectors<R: Runtime>(app: &AppHandle<R>, focus: Option<&str>) {
    if let Some(window) = app.get_webview_window(LABEL) {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    } else {
        let url = patchbay_core::tray_model::connectors_page(focus);
        let built = WebviewWindowBuilder::new(app, LABEL, WebviewUrl::App(url.into()))
            .title(TITLE)
            .inner_size(900.0, 640.0)
            .min_inner_size(560.0, 400.0)
            .focused(true)
            .build();
        if let Err(error) = built {
            tracing::error!("cannot open the Connectors window: {error}");
            return;
        }
    }
    if let Some(name) = focus {
        let _ = app.emit_to(LABEL, FOCUS_EVENT, name);
    }
}

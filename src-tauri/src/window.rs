//! The Connectors window, created on demand (a tray app opens no window at startup) and shown,
//! unminimized and focused when it already exists.

use tauri::{AppHandle, Emitter, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

pub const LABEL: &str = "connectors";
pub const TITLE: &str = "Patchbay — Connectors";
/// The event that asks the window to scroll to and highlight one connector; payload: its name.
pub const FOCUS_EVENT: &str = "focus-connector";
/// The event that asks the window to start authorizing one connector, exactly as its
/// Authorize button does (the tray's "Authorize …" items, `patchbay://authorize/NAME`);
/// payload: its name.
pub const AUTHORIZE_EVENT: &str = "authorize-connector";

/// Show the Connectors window, optionally focused on one connector. A window created for a
/// connector also gets it as `?focus=<name>` in its URL, since it cannot have listened yet.
pub fn show_connectors<R: Runtime>(app: &AppHandle<R>, focus: Option<&str>) {
    open(app, focus, false);
}

/// Show the Connectors window at `name`'s row and have it start authorizing that connector; the
/// window shows how to finish (in the browser, or by pasting). `name` is checked against the
/// catalog by the Authorizer the window calls.
pub fn authorize<R: Runtime>(app: &AppHandle<R>, name: &str) {
    open(app, Some(name), true);
}

fn open<R: Runtime>(app: &AppHandle<R>, focus: Option<&str>, authorize: bool) {
    if let Some(window) = app.get_webview_window(LABEL) {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
        if let Some(name) = focus {
            let _ = app.emit_to(LABEL, FOCUS_EVENT, name);
            if authorize {
                let _ = app.emit_to(LABEL, AUTHORIZE_EVENT, name);
            }
        }
        return;
    }
    let url = patchbay_core::tray_model::connectors_page(focus, authorize);
    let built = WebviewWindowBuilder::new(app, LABEL, WebviewUrl::App(url.into()))
        .title(TITLE)
        .inner_size(900.0, 640.0)
        .min_inner_size(560.0, 400.0)
        .focused(true)
        .build();
    if let Err(error) = built {
        tracing::error!("cannot open the Connectors window: {error}");
    }
}

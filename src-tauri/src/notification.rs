//! Shows the notices the core decides on (`patchbay_core::notify`) as desktop notifications.
//! On Linux (freedesktop notifications) a click runs the default action: the Connectors window
//! opens at that row. macOS and Windows show the notification; a click brings Patchbay forward.

use patchbay_core::Notice;
use tauri::{AppHandle, Runtime};

use crate::window;

pub fn show<R: Runtime>(app: &AppHandle<R>, notice: Notice) {
    let app = app.clone();
    // Waiting for the click blocks; a notification gets its own short-lived thread.
    let spawned = std::thread::Builder::new()
        .name("notification".into())
        .spawn(move || {
            let mut notification = notify_rust::Notification::new();
            notification
                .appname("Patchbay")
                .summary(&notice.title)
                .body(&notice.body);
            #[cfg(all(unix, not(target_os = "macos")))]
            {
                notification.action("default", "Open in Patchbay");
                match notification.show() {
                    Ok(handle) => handle.wait_for_action(|action| {
                        if action == "default" {
                            window::show_connectors(&app, Some(&notice.connector));
                        }
                    }),
                    Err(error) => tracing::warn!("cannot show a notification: {error}"),
                }
            }
            #[cfg(not(all(unix, not(target_os = "macos"))))]
            {
                let _ = (&app, window::LABEL);
                if let Err(error) = notification.show() {
                    tracing::warn!("cannot show a notification: {error}");
                }
            }
        });
    if let Err(error) = spawned {
        tracing::warn!("cannot show a notification: {error}");
    }
}

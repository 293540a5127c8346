//! Launch at login, the Connectors window's setting (off by default). The entry starts the app
//! with [`crate::BACKGROUND_FLAG`] (quietly, in the tray, no window). The entry is the setting: nothing
//! else stores it, so one the user removes by hand reads as off.
//!
//! - Linux: an XDG autostart entry, `$XDG_CONFIG_HOME/autostart/Patchbay.desktop` (else
//!   `~/.config/autostart`), kept by `patchbay_core::autostart` (tauri-plugin-autostart's
//!   auto-launch 0.6 ignores `XDG_CONFIG_HOME`).
//! - macOS (a LaunchAgent) and Windows (the `Run` key): the official tauri-plugin-autostart,
//!   through its Rust API only; none of its JavaScript commands is granted to the window.

#[cfg(any(target_os = "macos", windows))]
use patchbay_core::autostart::{BACKGROUND_FLAG, ENTRY_NAME};
use serde::{Serialize, Serializer};
use tauri::plugin::TauriPlugin;
use tauri::{AppHandle, Runtime};

/// Why the setting could not be read or changed; reaches the window as
/// `{ "kind": "launch_at_login", "message": ... }`, like the other commands' errors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[cfg(not(any(target_os = "macos", windows)))]
    #[error(transparent)]
    Xdg(#[from] patchbay_core::autostart::AutostartError),
    #[cfg(any(target_os = "macos", windows))]
    #[error("the system's login items refused: {0}")]
    Platform(String),
}

impl Serialize for Error {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Error", 2)?;
        s.serialize_field("kind", "launch_at_login")?;
        s.serialize_field("message", &self.to_string())?;
        s.end()
    }
}

/// Registered with the app: on macOS and Windows it adds tauri-plugin-autostart with
/// [`BACKGROUND_FLAG`]; on Linux there is nothing to set up (the entry is a file).
pub fn plugin<R: Runtime>() -> TauriPlugin<R> {
    tauri::plugin::Builder::new("launch-at-login")
        .setup(|_app, _api| {
            #[cfg(any(target_os = "macos", windows))]
            _app.plugin(
                tauri_plugin_autostart::Builder::new()
                    .app_name(ENTRY_NAME)
                    .arg(BACKGROUND_FLAG)
                    .build(),
            )?;
            Ok(())
        })
        .build()
}

/// Whether Patchbay starts at login.
pub fn is_enabled<R: Runtime>(_app: &AppHandle<R>) -> Result<bool, Error> {
    #[cfg(any(target_os = "macos", windows))]
    {
        use tauri_plugin_autostart::ManagerExt;
        _app.autolaunch()
            .is_enabled()
            .map_err(|e| Error::Platform(e.to_string()))
    }
    #[cfg(not(any(target_os = "macos", windows)))]
    {
        Ok(XdgAutostart::from_env(env_var)?.is_enabled()?)
    }
}

/// Turns launching at login on or off; answers the setting as it now is.
pub fn set<R: Runtime>(app: &AppHandle<R>, enabled: bool) -> Result<bool, Error> {
    #[cfg(any(target_os = "macos", windows))]
    {
        use tauri_plugin_autostart::ManagerExt;
        let manager = app.autolaunch();
        if enabled {
            manager.enable()
        } else {
            manager.disable()
        }
        .map_err(|e| Error::Platform(e.to_string()))?;
    }
    #[cfg(not(any(target_os = "macos", windows)))]
    {
        let entry = XdgAutostart::from_env(env_var)?;
        if enabled {
            entry.enable()?;
        } else {
            entry.disable()?;
        }
    }
    is_enabled(app)
}

#[cfg(not(any(target_os = "macos", windows)))]
use patchbay_core::autostart::XdgAutostart;

#[cfg(not(any(target_os = "macos", windows)))]
fn env_var(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name)
}

#[cfg(test)]
#[cfg(not(any(target_os = "macos", windows)))]
mod tests {
    use super::*;

    #[test]
    fn errors_reach_the_window_as_kind_and_message() {
        assert_eq!(
            serde_json::to_value(Error::from(
                patchbay_core::autostart::AutostartError::NoConfigDir
            ))
            .unwrap()["kind"],
            "launch_at_login"
        );
    }
}

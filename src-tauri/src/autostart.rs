//! Launch at login, the Connectors window's setting (off by default). The entry starts the app
//! with [`crate::BACKGROUND_FLAG`] (quietly, in the tray, no window). The entry is the setting:
//! nothing else stores it, so one the user removes by hand reads as off. Failures reach the
//! window as [`IpcError`] of kind `launch_at_login`, like every other command's.
//!
//! - Linux: an XDG autostart entry, `$XDG_CONFIG_HOME/autostart/Patchbay.desktop` (else
//!   `~/.config/autostart`), kept by `patchbay_core::autostart` (tauri-plugin-autostart's
//!   auto-launch 0.6 ignores `XDG_CONFIG_HOME`); `patchbay autostart` keeps the same entry.
//! - macOS (a LaunchAgent) and Windows (the `Run` key): the official tauri-plugin-autostart,
//!   through its Rust API only; none of its JavaScript commands is granted to the window.

use crate::error::IpcError;
#[cfg(any(target_os = "macos", windows))]
use patchbay_core::autostart::{BACKGROUND_FLAG, ENTRY_NAME};
use tauri::plugin::TauriPlugin;
use tauri::{AppHandle, Runtime};

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
pub fn is_enabled<R: Runtime>(_app: &AppHandle<R>) -> Result<bool, IpcError> {
    #[cfg(any(target_os = "macos", windows))]
    {
        use tauri_plugin_autostart::ManagerExt;
        _app.autolaunch().is_enabled().map_err(platform_error)
    }
    #[cfg(not(any(target_os = "macos", windows)))]
    {
        Ok(XdgAutostart::from_env(env_var)?.is_enabled()?)
    }
}

/// Turns launching at login on or off; answers the setting as it now is.
pub fn set<R: Runtime>(app: &AppHandle<R>, enabled: bool) -> Result<bool, IpcError> {
    #[cfg(any(target_os = "macos", windows))]
    {
        use tauri_plugin_autostart::ManagerExt;
        let manager = app.autolaunch();
        if enabled {
            manager.enable()
        } else {
            manager.disable()
        }
        .map_err(platform_error)?;
    }
    #[cfg(not(any(target_os = "macos", windows)))]
    {
        let entry = XdgAutostart::from_env(env_var)?;
        if enabled {
            // This program is the tray app; inside an AppImage, the AppImage (one rule with
            // the CLI's `patchbay autostart on`).
            let exe = std::env::current_exe().map_err(|e| {
                patchbay_core::autostart::AutostartError::NoProgramPath(e.to_string())
            })?;
            entry.enable(&tray_app_program(env_var, &exe)?)?;
        } else {
            entry.disable()?;
        }
    }
    is_enabled(app)
}

#[cfg(any(target_os = "macos", windows))]
fn platform_error(error: impl std::fmt::Display) -> IpcError {
    IpcError {
        kind: patchbay_core::ErrorKind::LaunchAtLogin,
        message: format!("the system's login items refused: {error}"),
    }
}

#[cfg(not(any(target_os = "macos", windows)))]
use patchbay_core::autostart::{tray_app_program, XdgAutostart};

#[cfg(not(any(target_os = "macos", windows)))]
fn env_var(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name)
}

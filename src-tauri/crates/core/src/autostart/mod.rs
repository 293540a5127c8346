//! Start at login: the login item that starts the tray app with [`BACKGROUND_FLAG`] (quietly,
//! in the tray, no window), one per OS, each kept by its own module:
//!
//! - Linux and the other XDG desktops: [`xdg::XdgAutostart`], a desktop entry.
//! - macOS: [`launch_agent::LaunchAgent`], a LaunchAgent property list.
//! - Windows: `run_key::RunKey`, a value under the user's `Run` key.
//!
//! [`LoginItem`] is the one for the OS this is built for. The item is the setting: nothing else
//! stores it, so one the user removes, or turns off where the OS lets them, reads as off. Both
//! the app (the window's switch) and the CLI (`patchbay autostart`) keep it; which program it
//! starts is one rule, [`tray_app_program`]. Written here rather than through
//! tauri-plugin-autostart (auto-launch 0.6): that one ignores `XDG_CONFIG_HOME`, writes the
//! Windows command unquoted (broken by a space in the path, as in `C:\Users\Ann Lee\...`), and
//! cannot be reached from the CLI.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub mod launch_agent;
pub mod run_command;
#[cfg(windows)]
pub mod run_key;
pub mod xdg;

pub use xdg::XdgAutostart;

/// The login item for the OS this is built for.
#[cfg(not(any(windows, target_os = "macos")))]
pub type LoginItem = xdg::XdgAutostart;
/// The login item for the OS this is built for.
#[cfg(target_os = "macos")]
pub type LoginItem = launch_agent::LaunchAgent;
/// The login item for the OS this is built for.
#[cfg(windows)]
pub type LoginItem = run_key::RunKey;

/// The flag the tray app starts quietly with (no window): what the login item passes.
pub const BACKGROUND_FLAG: &str = "--background";

/// The item's name: the packaged desktop entry's (`Patchbay.desktop`) and the `Run` value's.
pub const ENTRY_NAME: &str = "Patchbay";

/// The tray app's executable name (the .deb's `/usr/bin/patchbay-app`, cargo's bin name).
pub const TRAY_APP: &str = "patchbay-app";

/// Whether a login item is there, and whether the user turned it off where it lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginItemState {
    /// No item: off.
    Absent,
    /// The item is there and will start Patchbay at login.
    On,
    /// The item is there but the user turned it off in place (a desktop entry's `Hidden=true`,
    /// a LaunchAgent's `Disabled`, Task Manager's Startup tab): off.
    TurnedOff,
}

/// Why the login item could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum AutostartError {
    #[error("cannot {action} {path}: {reason}")]
    Io {
        action: &'static str,
        path: String,
        /// The OS error, or which part of the path is a file rather than a directory.
        reason: String,
        /// Not the error's `source`: `reason` already says it, and chains would repeat it.
        error: std::io::Error,
    },
    /// The Windows registry refused (`key` names the key and value).
    #[error("cannot {action} {key}: {reason}")]
    Registry {
        action: &'static str,
        key: String,
        reason: String,
    },
    #[error("cannot tell where the login item goes: {needs}")]
    NoConfigDir { needs: &'static str },
    #[error("cannot tell which program the login item starts: {0}")]
    NoProgramPath(String),
}

impl AutostartError {
    pub(crate) fn io(action: &'static str, path: &Path, error: std::io::Error) -> AutostartError {
        // "Not a directory" alone leaves the user guessing which part of the path is wrong.
        let reason = match not_a_directory(path) {
            Some(file) => format!("{} is a file, not a directory", file.display()),
            _ => error.to_string(),
        };
        AutostartError::Io {
            action,
            path: path.display().to_string(),
            reason,
            error,
        }
    }
}

/// The nearest ancestor of `path` that exists and is not a directory.
fn not_a_directory(path: &Path) -> Option<&Path> {
    path.ancestors()
        .skip(1)
        .find(|p| p.exists())
        .filter(|p| !p.is_dir())
}

/// A file-based item's state: absent, or on unless `turned_off` finds the user's switch in it.
fn file_state(
    path: &Path,
    turned_off: impl Fn(&str) -> bool,
) -> Result<LoginItemState, AutostartError> {
    match std::fs::read_to_string(path) {
        Ok(text) if turned_off(&text) => Ok(LoginItemState::TurnedOff),
        Ok(_) => Ok(LoginItemState::On),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LoginItemState::Absent),
        Err(e) => Err(AutostartError::io("read", path, e)),
    }
}

/// Writes a file-based item whole (temp file, fsync, rename; its directory created).
fn write_file(path: &Path, text: &str) -> Result<(), AutostartError> {
    crate::user_catalog::atomic_write(path, text.as_bytes())
        .map_err(|e| AutostartError::io("write", path, e))
}

/// Removes a file-based item; one already gone is fine.
fn remove_file(path: &Path) -> Result<(), AutostartError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(AutostartError::io("remove", path, e))
        }
        _ => Ok(()),
    }
}

/// `program` as UTF-8, which every item's format needs.
fn program_text(program: &Path) -> Result<&str, AutostartError> {
    program
        .to_str()
        .ok_or_else(|| AutostartError::NoProgramPath(format!("{} is not UTF-8", program.display())))
}

/// Whether this process's login item is on (the window's switch).
pub fn login_item_enabled() -> Result<bool, AutostartError> {
    LoginItem::from_env(process_env)?.is_enabled()
}

/// Turns the login item on or off from the tray app itself (the window's switch); answers
/// whether it is on now. It starts this program, whatever a bundle named it, or the AppImage
/// this program runs from.
pub fn set_login_item(enabled: bool) -> Result<bool, AutostartError> {
    let item = LoginItem::from_env(process_env)?;
    if enabled {
        let exe = std::env::current_exe()
            .map_err(|e| AutostartError::NoProgramPath(format!("this program's path: {e}")))?;
        item.enable(&appimage(process_env).unwrap_or(exe))?;
    } else {
        item.disable()?;
    }
    item.is_enabled()
}

fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// The AppImage this program runs from: the binary inside it is gone once it stops.
fn appimage(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    env("APPIMAGE").filter(|p| !p.is_empty()).map(PathBuf::from)
}

/// The program the login item starts: the tray app.
///
/// - Inside an AppImage (`APPIMAGE` set): the AppImage, since the binary inside it is gone
///   once it stops.
/// - `current_exe` when it is the tray app itself (the window's switch).
/// - Otherwise (the `patchbay` CLI): [`TRAY_APP`] beside `current_exe` (the .deb puts both in
///   `/usr/bin`; cargo both in `target/<profile>`), else the first on `PATH`.
pub fn tray_app_program(
    env: impl Fn(&str) -> Option<OsString>,
    current_exe: &Path,
) -> Result<PathBuf, AutostartError> {
    if let Some(appimage) = appimage(&env) {
        return Ok(appimage);
    }
    let app_name = format!("{TRAY_APP}{}", std::env::consts::EXE_SUFFIX);
    if current_exe.file_name() == Some(app_name.as_ref()) {
        return Ok(current_exe.to_path_buf());
    }
    let beside = current_exe.parent().map(|dir| dir.join(&app_name));
    if let Some(beside) = beside.as_ref().filter(|p| p.is_file()) {
        return Ok(beside.clone());
    }
    let on_path = env("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(&app_name))
            .find(|p| p.is_file())
    });
    on_path.ok_or_else(|| {
        AutostartError::NoProgramPath(format!(
            "{app_name} is neither beside {} nor on PATH; install Patchbay's app, or turn Start at login on from its window",
            current_exe.display()
        ))
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;

    /// An environment of these variables only.
    pub(crate) fn env_of(vars: &[(&str, &Path)]) -> impl Fn(&str) -> Option<OsString> {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn the_entry_starts_the_tray_app_found_by_one_rule() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        let app = format!("{TRAY_APP}{}", std::env::consts::EXE_SUFFIX);
        let cli = bin.join("patchbay");
        let path_var = std::env::join_paths([Path::new("relative"), &elsewhere]).unwrap();
        let path_env = |name: &str| (name == "PATH").then(|| path_var.clone());

        // The app itself (the window's switch) starts itself.
        let itself = bin.join(&app);
        assert_eq!(tray_app_program(path_env, &itself).unwrap(), itself);
        // An AppImage starts the AppImage, whoever asks.
        let appimage = Path::new("/opt/Patchbay.AppImage");
        let with_appimage = env_of(&[("APPIMAGE", appimage), ("PATH", Path::new(&path_var))]);
        assert_eq!(tray_app_program(with_appimage, &cli).unwrap(), appimage);
        // The CLI: nothing found names what it looked for.
        let message = tray_app_program(path_env, &cli).unwrap_err().to_string();
        assert!(
            message.contains(&format!("{app} is neither beside {}", cli.display())),
            "{message}"
        );
        // ... then the one on PATH ...
        std::fs::write(elsewhere.join(&app), "").unwrap();
        assert_eq!(
            tray_app_program(path_env, &cli).unwrap(),
            elsewhere.join(&app)
        );
        // ... and the one beside it comes first.
        std::fs::write(bin.join(&app), "").unwrap();
        assert_eq!(tray_app_program(path_env, &cli).unwrap(), bin.join(&app));
    }
}

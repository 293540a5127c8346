//! Launch at login on Linux and the other XDG desktops: the autostart entry
//! (`$XDG_CONFIG_HOME/autostart/Patchbay.desktop`, else `~/.config/autostart`) that starts the
//! tray app with [`BACKGROUND_FLAG`] (quietly, in the tray, no window). The entry is the setting:
//! nothing else stores it, so one the user removes by hand, or turns off in it, reads as off.
//! Written here rather than by tauri-plugin-autostart, whose auto-launch 0.6 always writes
//! `~/.config/autostart` and ignores `XDG_CONFIG_HOME`, which the session reads. macOS and
//! Windows keep their login items through that plugin, in the app.
//!
//! Both the app (the window's switch) and the CLI (`patchbay autostart`) write the entry; which
//! program it starts is one rule, [`tray_app_program`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The flag the tray app starts quietly with (no window): what the login entry passes.
pub const BACKGROUND_FLAG: &str = "--background";

/// The entry's name: the packaged desktop entry's (`Patchbay.desktop`), and the name
/// tauri-plugin-autostart gives it elsewhere (the product name).
pub const ENTRY_NAME: &str = "Patchbay";

/// The tray app's executable name (the .deb's `/usr/bin/patchbay-app`, cargo's bin name).
pub const TRAY_APP: &str = "patchbay-app";

/// Why the entry could not be read or changed.
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
    #[error("cannot tell where the autostart entry goes: neither XDG_CONFIG_HOME nor HOME is set to an absolute path")]
    NoConfigDir,
    #[error("cannot tell which program the autostart entry starts: {0}")]
    NoProgramPath(String),
}

/// The program the login entry starts: the tray app.
///
/// - Inside an AppImage (`APPIMAGE` set): the AppImage, since the binary inside it is gone
///   once it stops.
/// - `current_exe` when it is the tray app itself (the window's switch).
/// - Otherwise (the `patchbay` CLI): [`TRAY_APP`] beside `current_exe` (the .deb puts both in
///   /usr/bin; cargo both in target/<profile>), else the first on `PATH`.
pub fn tray_app_program(
    env: impl Fn(&str) -> Option<OsString>,
    current_exe: &Path,
) -> Result<PathBuf, AutostartError> {
    if let Some(appimage) = env("APPIMAGE").filter(|p| !p.is_empty()) {
        return Ok(appimage.into());
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

/// The XDG autostart entry (freedesktop's Desktop Application Autostart Specification).
#[derive(Debug, Clone)]
pub struct XdgAutostart {
    /// `$XDG_CONFIG_HOME/autostart/Patchbay.desktop`.
    path: PathBuf,
}

impl XdgAutostart {
    /// The entry, placed by `env` (`XDG_CONFIG_HOME`, else `HOME`).
    pub fn from_env(env: impl Fn(&str) -> Option<OsString>) -> Result<Self, AutostartError> {
        Ok(XdgAutostart {
            path: autostart_dir(env)?.join(format!("{ENTRY_NAME}.desktop")),
        })
    }

    /// The entry's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// On when the entry exists and the user did not turn it off in it (`Hidden=true`, or
    /// GNOME's `X-GNOME-Autostart-enabled=false`).
    pub fn is_enabled(&self) -> Result<bool, AutostartError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => Ok(!text.lines().any(|line| {
                let line = line.trim();
                line == "Hidden=true" || line == "X-GNOME-Autostart-enabled=false"
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(self.io("read", &self.path, source)),
        }
    }

    /// Writes the entry starting `program` (see [`tray_app_program`]) with [`BACKGROUND_FLAG`]
    /// (temp file, fsync, rename), replacing one that was there.
    pub fn enable(&self, program: &Path) -> Result<(), AutostartError> {
        let text = entry_text(program)?;
        crate::user_catalog::atomic_write(&self.path, text.as_bytes())
            .map_err(|e| self.io("write", &self.path, e))
    }

    /// Removes the entry; one already gone is fine.
    pub fn disable(&self) -> Result<(), AutostartError> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(self.io("remove", &self.path, e))
            }
            _ => Ok(()),
        }
    }

    fn io(&self, action: &'static str, path: &Path, source: std::io::Error) -> AutostartError {
        // "Not a directory" alone leaves the user guessing which part of the path is wrong.
        let reason = match not_a_directory(path) {
            Some(file) => format!("{} is a file, not a directory", file.display()),
            _ => source.to_string(),
        };
        AutostartError::Io {
            action,
            path: path.display().to_string(),
            reason,
            error: source,
        }
    }
}

/// The desktop entry's text: `program` [`BACKGROUND_FLAG`], named [`ENTRY_NAME`].
fn entry_text(program: &Path) -> Result<String, AutostartError> {
    let program = program.to_str().ok_or_else(|| {
        AutostartError::NoProgramPath(format!("{} is not UTF-8", program.display()))
    })?;
    Ok(format!(
        "[Desktop Entry]\n\
         Type=Application\n\
         Name={ENTRY_NAME}\n\
         Comment=Keeps your MCP connectors' tokens valid, from the tray\n\
         Exec={} {BACKGROUND_FLAG}\n\
         Icon=patchbay-app\n\
         Terminal=false\n\
         StartupNotify=false\n\
         X-GNOME-Autostart-enabled=true\n",
        exec_program(program)
    ))
}

/// The nearest ancestor of `path` that exists and is not a directory.
fn not_a_directory(path: &Path) -> Option<&Path> {
    path.ancestors()
        .skip(1)
        .find(|p| p.exists())
        .filter(|p| !p.is_dir())
}

/// `$XDG_CONFIG_HOME/autostart`, or `$HOME/.config/autostart` when XDG_CONFIG_HOME is unset,
/// empty or relative (the Base Directory Specification ignores a relative one).
fn autostart_dir(env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, AutostartError> {
    let absolute = |name: &str| env(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let config = absolute("XDG_CONFIG_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".config")))
        .ok_or(AutostartError::NoConfigDir)?;
    Ok(config.join("autostart"))
}

/// The program as the first word of an `Exec` line: quoted when it holds a reserved character,
/// with `"`, `` ` ``, `$` and `\` escaped inside the quotes; `%` doubled; and then a backslash
/// doubled again, as every string value of a desktop entry.
fn exec_program(program: &str) -> String {
    const RESERVED: &[char] = &[
        ' ', '\t', '\n', '"', '\'', '\\', '>', '<', '~', '|', '&', ';', '$', '*', '?', '#', '(',
        ')', '`',
    ];
    let word = if program.contains(RESERVED) {
        let mut quoted = String::from("\"");
        for c in program.chars() {
            if matches!(c, '"' | '`' | '$' | '\\') {
                quoted.push('\\');
            }
            quoted.push(c);
        }
        quoted.push('"');
        quoted
    } else {
        program.to_owned()
    };
    word.replace('%', "%%")
        .replace('\\', "\\\\")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;
    use std::path::Path;

    fn env_of(vars: &[(&str, &Path)]) -> impl Fn(&str) -> Option<OsString> {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn enabling_writes_the_entry_under_xdg_config_home_and_disabling_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        let home = dir.path().join("home");
        let entry =
            XdgAutostart::from_env(env_of(&[("XDG_CONFIG_HOME", &config), ("HOME", &home)]))
                .unwrap();
        let program = Path::new("/opt/Patch bay/Patchbay.AppImage");
        let expected = config.join("autostart/Patchbay.desktop");
        assert_eq!(entry.path(), expected);
        assert!(!entry.is_enabled().unwrap(), "off by default");
        assert!(!expected.exists());

        entry.enable(program).unwrap();
        let text = std::fs::read_to_string(&expected).expect("the entry was written");
        assert!(text.starts_with("[Desktop Entry]\n"), "{text}");
        assert!(text.contains("\nType=Application\n"), "{text}");
        assert!(
            text.contains("\nExec=\"/opt/Patch bay/Patchbay.AppImage\" --background\n"),
            "{text}"
        );
        assert!(entry.is_enabled().unwrap());
        assert!(!home.exists(), "nothing written under HOME");
        // Enabling again replaces the entry, leaving no temp file beside it.
        entry.enable(program).unwrap();
        let names: Vec<_> = std::fs::read_dir(config.join("autostart"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [OsString::from("Patchbay.desktop")]);

        entry.disable().unwrap();
        assert!(!expected.exists(), "the entry is gone");
        assert!(!entry.is_enabled().unwrap());
        entry.disable().expect("disabling twice is fine");
    }

    #[test]
    fn without_xdg_config_home_the_entry_goes_under_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        for xdg in [
            None,
            Some(Path::new("")),
            Some(Path::new("relative/config")),
        ] {
            let mut vars = vec![("HOME", home.as_path())];
            if let Some(xdg) = xdg {
                vars.push(("XDG_CONFIG_HOME", xdg));
            }
            let entry = XdgAutostart::from_env(env_of(&vars)).unwrap();
            assert_eq!(
                entry.path(),
                home.join(".config/autostart/Patchbay.desktop")
            );
        }
        assert!(matches!(
            XdgAutostart::from_env(env_of(&[])),
            Err(AutostartError::NoConfigDir)
        ));
    }

    #[test]
    fn an_entry_the_user_turned_off_reads_as_off() {
        let dir = tempfile::tempdir().unwrap();
        let entry = XdgAutostart::from_env(env_of(&[("XDG_CONFIG_HOME", dir.path())])).unwrap();
        let program = Path::new("/usr/bin/patchbay-app");
        entry.enable(program).unwrap();
        let text = std::fs::read_to_string(entry.path()).unwrap();
        std::fs::write(entry.path(), format!("{text}Hidden=true\n")).unwrap();
        assert!(!entry.is_enabled().unwrap());
        // Turning it on again rewrites the entry whole.
        entry.enable(program).unwrap();
        assert!(entry.is_enabled().unwrap());
    }

    #[test]
    fn a_config_home_that_is_a_file_is_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config");
        std::fs::write(&file, "not a directory").unwrap();
        let entry = XdgAutostart::from_env(env_of(&[("XDG_CONFIG_HOME", &file)])).unwrap();
        let expected = format!("{} is a file, not a directory", file.display());
        for error in [
            entry.is_enabled().unwrap_err(),
            entry
                .enable(Path::new("/usr/bin/patchbay-app"))
                .unwrap_err(),
            entry.disable().unwrap_err(),
        ] {
            let message = error.to_string();
            assert!(message.contains(&expected), "{message}");
            assert!(
                message.contains(&entry.path().display().to_string()),
                "{message}"
            );
        }
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

    #[test]
    fn the_program_is_quoted_only_when_it_must_be() {
        assert_eq!(
            exec_program("/usr/bin/patchbay-app"),
            "/usr/bin/patchbay-app"
        );
        assert_eq!(
            exec_program("/home/a b/x$y\\z%"),
            "\"/home/a b/x\\\\$y\\\\\\\\z%%\""
        );
    }
}

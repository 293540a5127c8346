//! Launch at login on Linux and the other XDG desktops: the autostart entry
//! (`$XDG_CONFIG_HOME/autostart/Patchbay.desktop`, else `~/.config/autostart`) that starts the
//! tray app with [`BACKGROUND_FLAG`] (quietly, in the tray, no window). The entry is the setting:
//! nothing else stores it, so one the user removes by hand, or turns off in it, reads as off.
//! Written here rather than by tauri-plugin-autostart, whose auto-launch 0.6 always writes
//! `~/.config/autostart` and ignores `XDG_CONFIG_HOME`, which the session reads. macOS and
//! Windows keep their login items through that plugin, in the app.

/// The flag the tray app starts quietly with (no window): what the login entry passes.
pub const BACKGROUND_FLAG: &str = "--background";

/// The entry's name: the packaged desktop entry's (`Patchbay.desktop`), and the name
/// tauri-plugin-autostart gives it elsewhere (the product name).
pub const ENTRY_NAME: &str = "Patchbay";

/// Why the entry could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum AutostartError {
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("cannot tell where the autostart entry goes: neither XDG_CONFIG_HOME nor HOME is set to an absolute path")]
    NoConfigDir,
    #[error("cannot tell this program's path for the autostart entry: {0}")]
    NoProgramPath(String),
}

/// The XDG autostart entry (freedesktop's Desktop Application Autostart Specification).
#[derive(Debug, Clone)]
pub struct XdgAutostart {
    /// `$XDG_CONFIG_HOME/autostart/Patchbay.desktop`.
    path: std::path::PathBuf,
    /// What the entry runs: this program (the AppImage when run from one).
    program: std::path::PathBuf,
}

impl XdgAutostart {
    /// The entry for this program, placed by `env` (`XDG_CONFIG_HOME`, `HOME`, `APPIMAGE`).
    pub fn from_env(
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, AutostartError> {
        let program = match env("APPIMAGE").filter(|p| !p.is_empty()) {
            Some(appimage) => appimage.into(),
            None => {
                std::env::current_exe().map_err(|e| AutostartError::NoProgramPath(e.to_string()))?
            }
        };
        Ok(XdgAutostart {
            path: autostart_dir(env)?.join(format!("{ENTRY_NAME}.desktop")),
            program,
        })
    }

    /// The entry's path.
    pub fn path(&self) -> &std::path::Path {
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

    /// Writes the entry (temp file, fsync, rename), replacing one that was there.
    pub fn enable(&self) -> Result<(), AutostartError> {
        let text = self.entry_text()?;
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

    fn entry_text(&self) -> Result<String, AutostartError> {
        let program = self.program.to_str().ok_or_else(|| {
            AutostartError::NoProgramPath(format!("{} is not UTF-8", self.program.display()))
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

    fn io(
        &self,
        action: &'static str,
        path: &std::path::Path,
        source: std::io::Error,
    ) -> AutostartError {
        AutostartError::Io {
            action,
            path: path.display().to_string(),
            source,
        }
    }
}

/// `$XDG_CONFIG_HOME/autostart`, or `$HOME/.config/autostart` when XDG_CONFIG_HOME is unset,
/// empty or relative (the Base Directory Specification ignores a relative one).
fn autostart_dir(
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<std::path::PathBuf, AutostartError> {
    let absolute = |name: &str| {
        env(name)
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
    };
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
        let entry = XdgAutostart::from_env(env_of(&[
            ("XDG_CONFIG_HOME", &config),
            ("HOME", &home),
            ("APPIMAGE", Path::new("/opt/Patch bay/Patchbay.AppImage")),
        ]))
        .unwrap();
        let expected = config.join("autostart/Patchbay.desktop");
        assert_eq!(entry.path(), expected);
        assert!(!entry.is_enabled().unwrap(), "off by default");
        assert!(!expected.exists());

        entry.enable().unwrap();
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
        entry.enable().unwrap();
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
        entry.enable().unwrap();
        let text = std::fs::read_to_string(entry.path()).unwrap();
        std::fs::write(entry.path(), format!("{text}Hidden=true\n")).unwrap();
        assert!(!entry.is_enabled().unwrap());
        // Turning it on again rewrites the entry whole.
        entry.enable().unwrap();
        assert!(entry.is_enabled().unwrap());
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

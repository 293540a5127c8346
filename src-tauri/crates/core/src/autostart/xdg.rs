//! The XDG autostart entry, Start at login on Linux and the other XDG desktops:
//! `$XDG_CONFIG_HOME/autostart/Patchbay.desktop` (else `~/.config/autostart`), starting the tray
//! app with [`BACKGROUND_FLAG`]. Written here rather than by auto-launch (tauri-plugin-autostart),
//! whose 0.6 always writes `~/.config/autostart` and ignores `XDG_CONFIG_HOME`, which the session
//! reads.

use super::{AutostartError, LoginItemState, BACKGROUND_FLAG, ENTRY_NAME};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

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

    /// Where the entry is, for messages.
    pub fn location(&self) -> String {
        self.path.display().to_string()
    }

    /// On when the entry exists and the user did not turn it off in it (`Hidden=true`, or
    /// GNOME's `X-GNOME-Autostart-enabled=false`).
    pub fn state(&self) -> Result<LoginItemState, AutostartError> {
        super::file_state(&self.path, |text| {
            text.lines().any(|line| {
                let line = line.trim();
                line == "Hidden=true" || line == "X-GNOME-Autostart-enabled=false"
            })
        })
    }

    /// [`Self::state`] is on.
    pub fn is_enabled(&self) -> Result<bool, AutostartError> {
        Ok(self.state()? == LoginItemState::On)
    }

    /// Writes the entry starting `program` (see [`super::tray_app_program`]) with
    /// [`BACKGROUND_FLAG`] (temp file, fsync, rename), replacing one that was there.
    pub fn enable(&self, program: &Path) -> Result<(), AutostartError> {
        super::write_file(&self.path, &entry_text(program)?)
    }

    /// Removes the entry; one already gone is fine.
    pub fn disable(&self) -> Result<(), AutostartError> {
        super::remove_file(&self.path)
    }
}

/// The desktop entry's text: `program` [`BACKGROUND_FLAG`], named [`ENTRY_NAME`].
fn entry_text(program: &Path) -> Result<String, AutostartError> {
    let program = super::program_text(program)?;
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

/// `$XDG_CONFIG_HOME/autostart`, or `$HOME/.config/autostart` when XDG_CONFIG_HOME is unset,
/// empty or relative (the Base Directory Specification ignores a relative one).
fn autostart_dir(env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, AutostartError> {
    let absolute = |name: &str| env(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let config = absolute("XDG_CONFIG_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".config")))
        .ok_or(AutostartError::NoConfigDir {
            needs: "neither XDG_CONFIG_HOME nor HOME is set to an absolute path",
        })?;
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
    use super::super::tests::env_of;
    use super::*;
    use std::ffi::OsString;
    use std::path::Path;

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
            Err(AutostartError::NoConfigDir { .. })
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
        assert_eq!(entry.state().unwrap(), LoginItemState::TurnedOff);
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

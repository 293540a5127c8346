//! The macOS login item: a LaunchAgent property list,
//! `~/Library/LaunchAgents/dev.patchbay.Patchbay.plist`, which launchd loads at the next login
//! and which runs the tray app with [`BACKGROUND_FLAG`] once (`RunAtLoad`), in the graphical
//! session only (`LimitLoadToSessionType` `Aqua`: not over SSH). `AssociatedBundleIdentifiers`
//! lets System Settings' Login Items name it after the app.
//!
//! Plain file work, so it is compiled and tested on every OS; only macOS uses it. What a user
//! switches off in System Settings (macOS 13+) is kept in launchd's own database, which only
//! Apple's ServiceManagement reads: that reads as on here. A `Disabled` key in the file reads as
//! off.

use super::{AutostartError, LoginItemState, BACKGROUND_FLAG};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The agent's label, and the file's name: the app's bundle identifier.
pub const LABEL: &str = "dev.patchbay.Patchbay";

/// The LaunchAgent property list.
#[derive(Debug, Clone)]
pub struct LaunchAgent {
    /// `$HOME/Library/LaunchAgents/dev.patchbay.Patchbay.plist`.
    path: PathBuf,
}

impl LaunchAgent {
    /// The agent, placed by `env` (`HOME`).
    pub fn from_env(env: impl Fn(&str) -> Option<OsString>) -> Result<Self, AutostartError> {
        let home = env("HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .ok_or(AutostartError::NoConfigDir {
                needs: "HOME is not set to an absolute path",
            })?;
        Ok(LaunchAgent {
            path: home.join(format!("Library/LaunchAgents/{LABEL}.plist")),
        })
    }

    /// The property list's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the agent is, for messages.
    pub fn location(&self) -> String {
        self.path.display().to_string()
    }

    /// On when the file exists without `<key>Disabled</key><true/>`.
    pub fn state(&self) -> Result<LoginItemState, AutostartError> {
        super::file_state(&self.path, is_disabled)
    }

    /// [`Self::state`] is on.
    pub fn is_enabled(&self) -> Result<bool, AutostartError> {
        Ok(self.state()? == LoginItemState::On)
    }

    /// Writes the agent starting `program` with [`BACKGROUND_FLAG`] (temp file, fsync, rename),
    /// replacing one that was there; `~/Library/LaunchAgents` is created when missing.
    pub fn enable(&self, program: &Path) -> Result<(), AutostartError> {
        super::write_file(&self.path, &plist_text(super::program_text(program)?))
    }

    /// Removes the agent; one already gone is fine.
    pub fn disable(&self) -> Result<(), AutostartError> {
        super::remove_file(&self.path)
    }
}

/// The property list's text.
fn plist_text(program: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>{LABEL}</string>
	<key>ProgramArguments</key>
	<array>
		<string>{}</string>
		<string>{BACKGROUND_FLAG}</string>
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>LimitLoadToSessionType</key>
	<string>Aqua</string>
	<key>ProcessType</key>
	<string>Interactive</string>
	<key>AssociatedBundleIdentifiers</key>
	<string>{LABEL}</string>
</dict>
</plist>
"#,
        xml_text(program)
    )
}

/// `text` as XML character data.
fn xml_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Whether the property list says `<key>Disabled</key>` then `<true/>` (whitespace between).
fn is_disabled(text: &str) -> bool {
    text.match_indices("<key>Disabled</key>")
        .any(|(at, key)| text[at + key.len()..].trim_start().starts_with("<true/>"))
}

#[cfg(test)]
mod tests {
    use super::super::tests::env_of;
    use super::*;

    #[test]
    fn enabling_writes_the_agent_under_home_and_disabling_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let agent = LaunchAgent::from_env(env_of(&[("HOME", &home)])).unwrap();
        let expected = home.join("Library/LaunchAgents/dev.patchbay.Patchbay.plist");
        assert_eq!(agent.path(), expected);
        assert_eq!(agent.state().unwrap(), LoginItemState::Absent);

        let program = Path::new("/Applications/Patch & Bay <1>.app/Contents/MacOS/patchbay-app");
        agent.enable(program).unwrap();
        let text = std::fs::read_to_string(&expected).expect("the agent was written");
        assert!(
            text.contains(
                "<string>/Applications/Patch &amp; Bay &lt;1&gt;.app/Contents/MacOS/patchbay-app</string>\n\t\t<string>--background</string>"
            ),
            "{text}"
        );
        assert!(text.contains("<key>RunAtLoad</key>\n\t<true/>"), "{text}");
        assert!(
            text.contains("<key>Label</key>\n\t<string>dev.patchbay.Patchbay</string>"),
            "{text}"
        );
        assert!(agent.is_enabled().unwrap());

        agent.disable().unwrap();
        assert!(!expected.exists());
        assert_eq!(agent.state().unwrap(), LoginItemState::Absent);
        agent.disable().expect("disabling twice is fine");
        assert!(matches!(
            LaunchAgent::from_env(env_of(&[("HOME", Path::new("relative"))])),
            Err(AutostartError::NoConfigDir { .. })
        ));
    }

    #[test]
    fn a_disabled_key_reads_as_turned_off_until_enabled_again() {
        let dir = tempfile::tempdir().unwrap();
        let agent = LaunchAgent::from_env(env_of(&[("HOME", dir.path())])).unwrap();
        let program = Path::new("/Applications/Patchbay.app/Contents/MacOS/patchbay-app");
        agent.enable(program).unwrap();
        let text = std::fs::read_to_string(agent.path()).unwrap();
        let off = text.replace("<dict>\n", "<dict>\n\t<key>Disabled</key>\n\t<true/>\n");
        std::fs::write(agent.path(), &off).unwrap();
        assert_eq!(agent.state().unwrap(), LoginItemState::TurnedOff);
        // `<false/>` is on.
        std::fs::write(
            agent.path(),
            off.replace("<true/>\n\t<key>Label", "<false/>\n\t<key>Label"),
        )
        .unwrap();
        assert_eq!(agent.state().unwrap(), LoginItemState::On);
        agent.enable(program).unwrap();
        assert_eq!(agent.state().unwrap(), LoginItemState::On);
    }
}

//! Who hands `patchbay://` links to the app on Linux. An installed package (the .deb) ships a
//! desktop entry that handles them, in `<prefix>/share/applications` beside this program's
//! `<prefix>/bin`; then the app registers nothing of its own (the deep-link plugin's
//! `register_all` writes a handler into the user's data dir and makes it the default, which
//! would outlive the package and shadow its entry). A build run from a source checkout has no
//! such entry and registers its own, so that links work there too.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use tauri::Runtime;
use tauri_plugin_deep_link::DeepLinkExt;

/// The scheme the app handles (tauri.conf.json's plugins.deep-link).
const SCHEME: &str = "patchbay";

/// Registers the app's own handler unless a package's desktop entry already handles the links.
pub fn register_unless_packaged<R: Runtime>(
    app: &tauri::App<R>,
) -> Result<(), tauri_plugin_deep_link::Error> {
    let packaged = std::env::current_exe()
        .ok()
        .and_then(|exe| packaged_entry(&exe, SCHEME));
    match packaged {
        Some(entry) => {
            tracing::debug!("{SCHEME}:// links come through {}", entry.display());
            Ok(())
        }
        None => app.deep_link().register_all(),
    }
}

/// The desktop entry in `<prefix>/share/applications` that runs `exe` (`<prefix>/bin/NAME`) and
/// declares `x-scheme-handler/<scheme>`, if there is one.
fn packaged_entry(exe: &Path, scheme: &str) -> Option<PathBuf> {
    let bin = exe.parent()?;
    if bin.file_name()? != "bin" {
        return None;
    }
    let applications = bin.parent()?.join("share/applications");
    let mime = format!("x-scheme-handler/{scheme}");
    std::fs::read_dir(applications)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "desktop"))
        .find(|path| {
            let Ok(text) = std::fs::read_to_string(path) else {
                return false;
            };
            let value = |key: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(key)?.trim_start().strip_prefix('='))
                    .map(str::trim)
            };
            let handles = value("MimeType").is_some_and(|m| m.split(';').any(|t| t == mime));
            let program = value("Exec")
                .and_then(|e| e.split_whitespace().next())
                .map(|w| w.trim_matches('"'));
            let runs_exe = program.is_some_and(|p| {
                Path::new(p) == exe || (!p.contains('/') && exe.file_name().is_some_and(|n| n == p))
            });
            handles && runs_exe
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix_with(entry: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::create_dir_all(dir.path().join("share/applications")).unwrap();
        if let Some(text) = entry {
            std::fs::write(dir.path().join("share/applications/Patchbay.desktop"), text).unwrap();
        }
        dir
    }

    #[test]
    fn a_packaged_entry_that_runs_this_program_and_takes_the_scheme_is_found() {
        let prefix = prefix_with(Some(
            "[Desktop Entry]\nExec=patchbay-app %u\nMimeType=x-scheme-handler/patchbay;\n",
        ));
        let exe = prefix.path().join("bin/patchbay-app");
        assert_eq!(
            packaged_entry(&exe, "patchbay"),
            Some(prefix.path().join("share/applications/Patchbay.desktop"))
        );
        // An Exec line naming the program by its full path, quoted, with other MIME types.
        let full = prefix_with(None);
        let exe = full.path().join("bin/patchbay-app");
        std::fs::write(
            full.path().join("share/applications/Patchbay.desktop"),
            format!(
                "[Desktop Entry]\nMimeType=text/plain;x-scheme-handler/patchbay\nExec=\"{}\" %u\n",
                exe.display()
            ),
        )
        .unwrap();
        assert!(packaged_entry(&exe, "patchbay").is_some());
    }

    #[test]
    fn no_entry_another_program_or_another_scheme_is_not_a_package() {
        let none = prefix_with(None);
        assert!(packaged_entry(&none.path().join("bin/patchbay-app"), "patchbay").is_none());
        let other_program = prefix_with(Some(
            "[Desktop Entry]\nExec=other-app %u\nMimeType=x-scheme-handler/patchbay;\n",
        ));
        let exe = other_program.path().join("bin/patchbay-app");
        assert!(packaged_entry(&exe, "patchbay").is_none());
        let other_scheme = prefix_with(Some(
            "[Desktop Entry]\nExec=patchbay-app %u\nMimeType=x-scheme-handler/patchbayx;\n",
        ));
        let exe = other_scheme.path().join("bin/patchbay-app");
        assert!(packaged_entry(&exe, "patchbay").is_none());
        // A development build (target/debug) is not under a bin/ directory.
        assert!(packaged_entry(Path::new("/src/target/debug/patchbay-app"), "patchbay").is_none());
    }
}

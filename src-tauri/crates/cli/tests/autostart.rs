//! `patchbay autostart [on|off]` run as a process with `XDG_CONFIG_HOME` in a temp dir: the
//! entry appears with the tray app's `--background` Exec and goes again, status reads it (an entry
//! removed by hand reads as off), the tray app is found beside the CLI or on PATH, and a bad
//! `XDG_CONFIG_HOME` is an error naming the path. (XDG desktops only: elsewhere the window owns it.)
#![cfg(not(any(target_os = "macos", windows)))]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Held while a test writes an executable and while it runs one. A file open for writing when
/// another test's thread forks stays open in that child until it execs, and exec'ing the file
/// meanwhile fails with ETXTBSY ("Text file busy"); these tests take well under a second, so
/// they simply take turns.
static EXECUTABLES: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn executables() -> std::sync::MutexGuard<'static, ()> {
    EXECUTABLES.lock().unwrap_or_else(|p| p.into_inner())
}

/// The CLI, copied into `bin/` so what lies beside it is the test's choice.
struct Setup {
    dir: tempfile::TempDir,
    cli: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let cli = bin.join("patchbay");
        let _turn = executables();
        std::fs::copy(env!("CARGO_BIN_EXE_patchbay"), &cli).unwrap();
        Setup { dir, cli }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("config")
    }

    fn entry(&self) -> PathBuf {
        self.config().join("autostart/Patchbay.desktop")
    }

    /// An executable stand-in for the tray app at `dir/patchbay-app`.
    fn tray_app_in(&self, dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let app = dir.join("patchbay-app");
        let _turn = executables();
        std::fs::write(&app, "#!/bin/sh\nexit 0\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        app
    }

    fn run_with(&self, config: &Path, path_var: &Path, args: &[&str]) -> Output {
        let _turn = executables();
        Command::new(&self.cli)
            .arg("autostart")
            .args(args)
            .env("XDG_CONFIG_HOME", config)
            .env("HOME", self.dir.path().join("home"))
            .env("PATH", path_var)
            .env_remove("APPIMAGE")
            .env("PATCHBAY_DATA_DIR", self.dir.path().join("data"))
            .output()
            .unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(&self.config(), &self.dir.path().join("empty-path"), args)
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok(out: Output) -> Output {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    out
}

fn enabled(setup: &Setup) -> bool {
    let out = ok(setup.run(&["--json"]));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["entry"], setup.entry().to_str().unwrap());
    value["enabled"].as_bool().expect("enabled is a boolean")
}

#[test]
fn on_writes_the_entry_starting_the_tray_app_and_off_removes_it() {
    let setup = Setup::new();
    let app = setup.tray_app_in(setup.cli.parent().unwrap());
    assert!(!enabled(&setup), "off by default");
    let status = stdout(&ok(setup.run(&[])));
    assert!(status.starts_with("Start at login: off (no "), "{status}");

    let on = stdout(&ok(setup.run(&["on"])));
    assert!(
        on.starts_with(&format!(
            "Start at login: on. At login, {} --background starts Patchbay",
            app.display()
        )),
        "{on}"
    );
    let text = std::fs::read_to_string(setup.entry()).expect("the entry was written");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "[Desktop Entry]");
    assert!(lines.contains(&"Name=Patchbay"), "{text}");
    assert!(lines.contains(&"Type=Application"), "{text}");
    let exec = format!("Exec={} --background", app.display());
    assert!(lines.contains(&exec.as_str()), "{text}");
    assert!(enabled(&setup));
    let status = stdout(&ok(setup.run(&["status"])));
    assert!(
        status.starts_with("Start at login: on (entry: "),
        "{status}"
    );

    let off = stdout(&ok(setup.run(&["off", "--json"])));
    let value: serde_json::Value = serde_json::from_str(&off).unwrap();
    assert_eq!(value["enabled"], false);
    assert!(!setup.entry().exists(), "the entry is gone");
    assert!(!enabled(&setup));
    // Off twice is fine.
    let off = stdout(&ok(setup.run(&["off"])));
    assert!(off.starts_with("Start at login: off ("), "{off}");
}

#[test]
fn an_entry_removed_or_turned_off_by_hand_reads_as_off() {
    let setup = Setup::new();
    setup.tray_app_in(setup.cli.parent().unwrap());
    ok(setup.run(&["on"]));
    assert!(enabled(&setup));
    std::fs::remove_file(setup.entry()).unwrap();
    assert!(!enabled(&setup));

    ok(setup.run(&["on"]));
    let text = std::fs::read_to_string(setup.entry()).unwrap();
    std::fs::write(
        setup.entry(),
        text.replace("X-GNOME-Autostart-enabled=true", "Hidden=true"),
    )
    .unwrap();
    assert!(!enabled(&setup));
    let status = stdout(&ok(setup.run(&[])));
    assert!(
        status.contains("is turned off where it is kept"),
        "{status}"
    );
    // On again rewrites it whole.
    ok(setup.run(&["on"]));
    assert!(enabled(&setup));
}

#[test]
fn the_tray_app_is_found_on_path_when_not_beside_the_cli_and_its_absence_is_named() {
    let setup = Setup::new();
    let elsewhere = setup.dir.path().join("elsewhere");
    let out = setup.run_with(&setup.config(), &elsewhere, &["on"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "patchbay-app is neither beside {}",
            setup.cli.display()
        )),
        "{err}"
    );
    assert!(!setup.entry().exists(), "nothing written");

    let app = setup.tray_app_in(&elsewhere);
    ok(setup.run_with(&setup.config(), &elsewhere, &["on"]));
    let text = std::fs::read_to_string(setup.entry()).unwrap();
    assert!(
        text.contains(&format!("\nExec={} --background\n", app.display())),
        "{text}"
    );
}

#[test]
fn a_config_home_that_is_a_file_is_an_error_naming_it() {
    let setup = Setup::new();
    setup.tray_app_in(setup.cli.parent().unwrap());
    let file = setup.dir.path().join("config-file");
    std::fs::write(&file, "").unwrap();
    let empty = setup.dir.path().join("empty-path");
    for args in [&[][..], &["on"], &["off"]] {
        let out = setup.run_with(&file, &empty, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.contains(&format!("{} is a file, not a directory", file.display())),
            "{args:?}: {err}"
        );
        assert!(err.contains("autostart/Patchbay.desktop"), "{err}");
    }
    // A relative XDG_CONFIG_HOME is ignored (the Base Directory Specification): HOME's is used.
    let out = ok(setup.run_with(Path::new("relative"), &empty, &["--json"]));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        value["entry"],
        setup
            .dir
            .path()
            .join("home/.config/autostart/Patchbay.desktop")
            .to_str()
            .unwrap()
    );
}

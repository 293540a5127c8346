//! `patchbay autostart [on|off]`: Start at login, the Connectors window's switch, from a
//! terminal. On Linux and the other XDG desktops it keeps the same entry the window does
//! (`patchbay_core::autostart`: `$XDG_CONFIG_HOME/autostart/Patchbay.desktop`, starting the tray
//! app `patchbay-app --background`). On macOS and Windows the app's login item belongs to the
//! app (tauri-plugin-autostart), so the CLI says to use the window and exits with 2.

use anyhow::Result;
use clap::{Args, Subcommand};
use std::io::Write;
use std::process::ExitCode;

#[derive(Args)]
#[command(
    after_help = "Linux: the entry is $XDG_CONFIG_HOME/autostart/Patchbay.desktop (else ~/.config/autostart); \
                  it starts patchbay-app (beside this program, else on PATH) with --background. \
                  macOS and Windows: use the Start at login switch in Patchbay's window."
)]
pub struct AutostartArgs {
    #[command(subcommand)]
    command: Option<AutostartCommand>,
    /// Print `{"enabled": BOOL, "entry": PATH}` instead of a sentence.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand, Clone, Copy)]
enum AutostartCommand {
    /// Whether Patchbay starts at login (the default).
    Status,
    /// Start Patchbay in the tray at login (no window opens).
    On,
    /// Do not start Patchbay at login.
    Off,
}

pub fn run(args: AutostartArgs, out: &mut impl Write) -> Result<ExitCode> {
    let command = args.command.unwrap_or(AutostartCommand::Status);
    platform::run(command, args.json, out)
}

#[cfg(not(any(target_os = "macos", windows)))]
mod platform {
    use super::AutostartCommand;
    use crate::terminal::one_line;
    use anyhow::{Context, Result};
    use patchbay_core::autostart::{tray_app_program, XdgAutostart, BACKGROUND_FLAG};
    use std::io::Write;
    use std::process::ExitCode;

    pub fn run(command: AutostartCommand, json: bool, out: &mut impl Write) -> Result<ExitCode> {
        let env = |name: &str| std::env::var_os(name);
        let entry = XdgAutostart::from_env(env)?;
        let path = entry.path().display().to_string();
        let mut started = None;
        match command {
            AutostartCommand::Status => {}
            AutostartCommand::On => {
                let exe = std::env::current_exe()
                    .context("cannot tell this program's path, to find patchbay-app beside it")?;
                let program = tray_app_program(env, &exe)?;
                entry.enable(&program)?;
                started = Some(program);
            }
            AutostartCommand::Off => entry.disable()?,
        }
        let enabled = entry.is_enabled()?;
        if json {
            write_json!(
                out,
                &serde_json::json!({ "enabled": enabled, "entry": path })
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        let path = one_line(&path);
        match (command, enabled, started) {
            (_, true, Some(program)) => writeln!(
                out,
                "Start at login: on. At login, {} {BACKGROUND_FLAG} starts Patchbay in the tray (entry: {path}).",
                one_line(&program.display().to_string())
            )?,
            (_, true, None) => writeln!(out, "Start at login: on (entry: {path}).")?,
            (AutostartCommand::Off, false, _) => {
                writeln!(out, "Start at login: off ({path} is gone).")?
            }
            (_, false, _) if entry.path().exists() => writeln!(
                out,
                "Start at login: off ({path} is turned off in it). Turn it on with `patchbay autostart on`."
            )?,
            (_, false, _) => writeln!(
                out,
                "Start at login: off (no {path}). Turn it on with `patchbay autostart on`."
            )?,
        }
        Ok(ExitCode::SUCCESS)
    }
}

#[cfg(any(target_os = "macos", windows))]
mod platform {
    use super::AutostartCommand;
    use anyhow::{bail, Result};
    use std::io::Write;
    use std::process::ExitCode;

    pub fn run(_command: AutostartCommand, _json: bool, _out: &mut impl Write) -> Result<ExitCode> {
        // The login item is the app's (tauri-plugin-autostart names and points it); a second
        // writer here could leave one the app does not recognise.
        bail!(
            "on {}, Start at login is a setting of Patchbay's window: open Patchbay and use its Start at login switch",
            if cfg!(windows) { "Windows" } else { "macOS" }
        )
    }
}

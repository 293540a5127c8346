//! `patchbay autostart [on|off]`: Start at login, the Connectors window's switch, from a
//! terminal. It keeps the same login item the window does (`patchbay_core::autostart`: an XDG
//! autostart entry, a LaunchAgent, the `Run` key), starting the tray app with `--background`.

use crate::terminal::one_line;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use patchbay_core::autostart::{tray_app_program, LoginItem, LoginItemState, BACKGROUND_FLAG};
use std::io::Write;
use std::process::ExitCode;

#[derive(Args)]
#[command(
    after_help = "The login item starts patchbay-app (beside this program, else on PATH) with --background. \
                  Linux: $XDG_CONFIG_HOME/autostart/Patchbay.desktop (else ~/.config/autostart). \
                  macOS: ~/Library/LaunchAgents/dev.patchbay.Patchbay.plist. \
                  Windows: the value Patchbay under HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run."
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
    let env = |name: &str| std::env::var_os(name);
    let item = LoginItem::from_env(env)?;
    let location = item.location();
    let mut started = None;
    match command {
        AutostartCommand::Status => {}
        AutostartCommand::On => {
            let exe = std::env::current_exe()
                .context("cannot tell this program's path, to find patchbay-app beside it")?;
            let program = tray_app_program(env, &exe)?;
            item.enable(&program)?;
            started = Some(program);
        }
        AutostartCommand::Off => item.disable()?,
    }
    let state = item.state()?;
    if args.json {
        write_json!(
            out,
            &serde_json::json!({ "enabled": state == LoginItemState::On, "entry": location })
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let location = one_line(&location);
    match (command, state, started) {
        (_, LoginItemState::On, Some(program)) => writeln!(
            out,
            "Start at login: on. At login, {} {BACKGROUND_FLAG} starts Patchbay in the tray (entry: {location}).",
            one_line(&program.display().to_string())
        )?,
        (_, LoginItemState::On, None) => writeln!(out, "Start at login: on (entry: {location}).")?,
        (AutostartCommand::Off, _, _) => writeln!(out, "Start at login: off ({location} is gone).")?,
        (_, LoginItemState::TurnedOff, _) => writeln!(
            out,
            "Start at login: off ({location} is turned off where it is kept). Turn it on with `patchbay autostart on`."
        )?,
        (_, LoginItemState::Absent, _) => writeln!(
            out,
            "Start at login: off (no {location}). Turn it on with `patchbay autostart on`."
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

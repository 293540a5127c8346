//! `patchbay add-to CLIENT NAME` ("Add to Cursor / VS Code / Claude Desktop / Windsurf") and
//! `patchbay switch CLIENT SERVER` (an `npx mcp-remote URL` entry switched to Patchbay): thin
//! calls into patchbay_core::client_config.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use patchbay_core::client_config::{self, Route};
use patchbay_core::Patchbay;
use patchbay_runtimes::clients::write::{Change, Conflict, Written};

use crate::terminal::one_line;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Via {
    /// The client launches `patchbay connect NAME` (works in every client, Claude Desktop too).
    Stdio,
    /// The client connects to the gateway's /mcp/NAME with its own secret header.
    Gateway,
}

#[derive(Args)]
pub struct AddToArgs {
    /// cursor, vscode, claude-desktop or windsurf.
    pub client: String,
    /// The connector in use (`patchbay status` lists them); also the entry's name in the client.
    pub name: String,
    #[arg(long, value_enum, default_value = "stdio")]
    pub via: Via,
    /// Overwrite an entry of that name that is not Patchbay's (refused otherwise).
    #[arg(long)]
    pub replace: bool,
}

#[derive(Args)]
pub struct SwitchArgs {
    /// cursor, vscode, claude-desktop or windsurf.
    pub client: String,
    /// The client's name for the `npx mcp-remote URL` entry to switch.
    pub server: String,
    #[arg(long, value_enum, default_value = "stdio")]
    pub via: Via,
}

fn route(via: Via) -> Result<Route, patchbay_core::CoreError> {
    match via {
        Via::Stdio => Ok(Route::Connect {
            command: client_config::current_connect_command(),
        }),
        // The gateway's client registry (per-client secrets) is not in this build yet.
        Via::Gateway => Err(patchbay_core::CoreError::InvalidInput(
            "--via gateway needs the gateway's client registry (`patchbay gateway client add`), which this build does not have yet; use --via stdio".into(),
        )),
    }
}

pub fn add_to(patchbay: &Patchbay, args: AddToArgs, out: &mut impl Write) -> Result<ExitCode> {
    let client = client_config::parse_client(&args.client)?;
    let conflict = if args.replace {
        Conflict::Replace
    } else {
        Conflict::Refuse
    };
    let written =
        client_config::add_to_client(patchbay, client, &args.name, route(args.via)?, conflict)?;
    report(&written, out)?;
    Ok(ExitCode::SUCCESS)
}

pub fn switch(patchbay: &Patchbay, args: SwitchArgs, out: &mut impl Write) -> Result<ExitCode> {
    let client = client_config::parse_client(&args.client)?;
    let via = args.via;
    let switched =
        client_config::switch_to_patchbay(patchbay, client, &args.server, |_| route(via))?;
    if switched.managed {
        writeln!(
            out,
            "{} is now managed by Patchbay ({}).",
            one_line(&switched.connector),
            patchbay.writable_catalog().display()
        )?;
    }
    report(&switched.written, out)?;
    if switched.written.name != switched.connector {
        writeln!(
            out,
            "  \"{}\" reaches the connector {}.",
            one_line(&switched.written.name),
            one_line(&switched.connector)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn report(written: &Written, out: &mut impl Write) -> Result<()> {
    let client = written.client.display_name();
    let name = one_line(&written.name);
    let file = written.file.display();
    match written.change {
        Change::Added => writeln!(out, "Added {name} to {client} ({file}).")?,
        Change::Replaced => writeln!(
            out,
            "{client}'s \"{name}\" now goes through Patchbay ({file})."
        )?,
        Change::Unchanged => writeln!(
            out,
            "{client} already has {name} through Patchbay ({file})."
        )?,
    }
    if let Some(backup) = &written.backup {
        writeln!(
            out,
            "  The file as it was is saved in {}.",
            backup.display()
        )?;
    }
    if written.change != Change::Unchanged {
        writeln!(
            out,
            "  Restart {client} (or reload its MCP servers) to pick it up."
        )?;
    }
    Ok(())
}

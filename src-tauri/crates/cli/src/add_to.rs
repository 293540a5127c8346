//! `patchbay add-to CLIENT NAME` ("Add to Claude Code / Codex / Gemini CLI / Cursor / VS Code /
//! Claude Desktop / Windsurf") and
//! `patchbay switch CLIENT SERVER` (an `npx mcp-remote URL` entry switched to Patchbay): thin
//! calls into patchbay_gateway::client_entries (the same the window's commands make), printed.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use patchbay_core::client_config;
use patchbay_core::Patchbay;
use patchbay_gateway::client_entries::{self, ClientWrite, WritePreview};
use patchbay_gateway::DEFAULT_PORT;

use crate::terminal::one_line;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Via {
    /// The client launches `patchbay connect NAME` by its absolute path (works in every client,
    /// Claude Desktop too).
    Stdio,
    /// The client connects to the gateway's /mcp/NAME with its own secret (the gateway must be
    /// running: the app, or `patchbay gateway serve`).
    Gateway,
}

#[derive(Args)]
pub struct AddToArgs {
    /// claude-code, codex, gemini, cursor, vscode, claude-desktop or windsurf.
    pub client: String,
    /// The connector in use (`patchbay status` lists them); also the entry's name in the client.
    pub name: String,
    #[arg(long, value_enum, default_value = "stdio")]
    pub via: Via,
    /// Overwrite an entry of that name that is not Patchbay's (refused otherwise).
    #[arg(long)]
    pub replace: bool,
    /// The gateway's port (with --via gateway).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Print the entry as it is and as it would be (no value of a header or variable), and
    /// write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args)]
pub struct SwitchArgs {
    /// claude-code, codex, gemini, cursor, vscode, claude-desktop or windsurf.
    #[arg(required_unless_present = "list")]
    pub client: Option<String>,
    /// The client's name for the `npx mcp-remote URL` entry to switch.
    #[arg(required_unless_present = "list")]
    pub server: Option<String>,
    /// List the mcp-remote entries that can be switched, and the connector each would reach.
    #[arg(long, conflicts_with_all = ["client", "server"])]
    pub list: bool,
    /// With --list: print JSON.
    #[arg(long, requires = "list")]
    pub json: bool,
    #[arg(long, value_enum, default_value = "stdio")]
    pub via: Via,
    /// The gateway's port (with --via gateway).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Print the entry as it is and as it would be, and write nothing.
    #[arg(long, conflicts_with = "list")]
    pub dry_run: bool,
}

impl From<Via> for client_entries::Via {
    fn from(via: Via) -> client_entries::Via {
        match via {
            Via::Stdio => client_entries::Via::Stdio,
            Via::Gateway => client_entries::Via::Gateway,
        }
    }
}

pub fn add_to(patchbay: &Patchbay, args: AddToArgs, out: &mut impl Write) -> Result<ExitCode> {
    let client = client_config::parse_client(&args.client)?;
    if args.dry_run {
        let preview = client_entries::preview_add_to_client(
            patchbay,
            client,
            &args.name,
            args.via.into(),
            args.port,
            args.replace,
        )?;
        print_preview(&preview, out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let written = client_entries::add_to_client(
        patchbay,
        client,
        &args.name,
        args.via.into(),
        args.port,
        args.replace,
    )?;
    report(&written, out)?;
    Ok(ExitCode::SUCCESS)
}

fn list_candidates(patchbay: &Patchbay, json: bool, out: &mut impl Write) -> Result<ExitCode> {
    let candidates = client_config::switch_candidates(patchbay)?;
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&candidates)?)?;
    } else if candidates.is_empty() {
        writeln!(out, "No client runs a server through npx mcp-remote.")?;
    } else {
        for c in &candidates {
            let reaches = match &c.connector {
                Some(name) => format!("-> {}", one_line(name)),
                None => "(no connector in use has this URL)".into(),
            };
            writeln!(
                out,
                "{} {}  {}  {reaches}",
                c.client,
                one_line(&c.entry),
                one_line(&c.url)
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn switch(patchbay: &Patchbay, args: SwitchArgs, out: &mut impl Write) -> Result<ExitCode> {
    if args.list {
        return list_candidates(patchbay, args.json, out);
    }
    let (Some(client), Some(server)) = (args.client, args.server) else {
        anyhow::bail!("name the client and the server to switch, or pass --list");
    };
    let client = client_config::parse_client(&client)?;
    if args.dry_run {
        let preview = client_entries::preview_switch_client_entry(
            patchbay,
            client,
            &server,
            args.via.into(),
            args.port,
        )?;
        print_preview(&preview, out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let switched =
        client_entries::switch_client_entry(patchbay, client, &server, args.via.into(), args.port)?;
    if switched.managed {
        writeln!(
            out,
            "{} is now managed by Patchbay ({}).",
            one_line(&switched.connector),
            patchbay.writable_catalog().display()
        )?;
    }
    report(&switched, out)?;
    if switched.name != switched.connector {
        writeln!(
            out,
            "  \"{}\" reaches the connector {}.",
            one_line(&switched.name),
            one_line(&switched.connector)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn report(written: &ClientWrite, out: &mut impl Write) -> Result<()> {
    let client = written.client_name;
    let name = one_line(&written.name);
    let file = written.file.display();
    match written.change {
        "added" => writeln!(out, "Added {name} to {client} ({file}).")?,
        "replaced" => writeln!(
            out,
            "{client}'s \"{name}\" now goes through Patchbay ({file})."
        )?,
        _ => writeln!(
            out,
            "{client} already has {name} through Patchbay ({file})."
        )?,
    }
    if let Some(warning) = &written.warning {
        writeln!(out, "  Warning: {warning}")?;
    }
    if let Some(label) = &written.gateway_client {
        writeln!(
            out,
            "  Gateway client \"{}\" created for it (`patchbay gateway client revoke {}` ends it).",
            one_line(label),
            one_line(label)
        )?;
    }
    if let Some(backup) = &written.backup {
        writeln!(
            out,
            "  The file as it was is saved in {}.",
            backup.display()
        )?;
    }
    if written.change != "unchanged" {
        writeln!(
            out,
            "  Restart {client} (or reload its MCP servers) to pick it up."
        )?;
    }
    Ok(())
}

/// `--dry-run`: the entry now and after, in the file's syntax (values hidden by the preview).
fn print_preview(p: &WritePreview, out: &mut impl Write) -> Result<()> {
    let what = match p.change {
        "unchanged" => "would change nothing in",
        "replaced" => "would replace one entry in",
        _ => "would add one entry to",
    };
    writeln!(
        out,
        "{} {what} {} ({}); nothing was written.",
        one_line(&p.connector),
        p.client_name,
        p.file.display()
    )?;
    writeln!(out, "\nNow:")?;
    match &p.before {
        Some(before) => writeln!(out, "{before}")?,
        None => writeln!(out, "  (no entry named \"{}\")", one_line(&p.name))?,
    }
    writeln!(out, "\nAfter:\n{}", p.after)?;
    if let Some(warning) = &p.warning {
        writeln!(out, "\nWarning: {warning}")?;
    }
    Ok(())
}

//! `patchbay import`: adopt the tokens already on this machine (Claude Code, Codex, mcp-remote)
//! for the catalog's connectors Patchbay holds no credential for, and `--delete-plaintext NAME`
//! to delete mcp-remote's plaintext files once Patchbay holds the credential. One call each into
//! `patchbay_core::import`; this file parses and prints.

use crate::table::when;
use crate::terminal::one_line;
use anyhow::{bail, Context, Result};
use clap::Args;
use patchbay_core::import::{
    catalog_targets, delete_plaintext, import, ImportOptions, ImportSources, ImportTarget,
};
use patchbay_core::Patchbay;
use patchbay_runtimes::clients::{self, ClientPaths, ClientServer};
use std::io::Write;
use std::process::ExitCode;

#[derive(Args)]
pub struct ImportArgs {
    /// Delete mcp-remote's plaintext token files for the connector NAME (once Patchbay holds
    /// its credential) instead of importing.
    #[arg(long, value_name = "NAME")]
    pub delete_plaintext: Option<String>,
    #[arg(long)]
    pub json: bool,
}

/// The mcp-remote invocations the clients configure (their options name mcp-remote's files).
/// A client file that cannot be read is a warning: it hides nothing else.
fn client_servers() -> Vec<ClientServer> {
    let Some(paths) = ClientPaths::from_env() else {
        return Vec::new();
    };
    let cwd = std::env::current_dir().ok();
    let projects = clients::default_project_dirs(&paths, cwd.as_deref());
    let scan = clients::read_all(&paths, &projects);
    for error in &scan.errors {
        crate::warn(&format!("warning: {error}"));
    }
    scan.servers
}

fn targets(patchbay: &Patchbay) -> Vec<ImportTarget> {
    catalog_targets(patchbay, &client_servers())
}

/// Exit 0 when it ran (whether or not anything was found), 2 on an error.
pub fn run(patchbay: Patchbay, args: ImportArgs, out: &mut impl Write) -> Result<ExitCode> {
    let sources = ImportSources::from_env();
    if let Some(name) = args.delete_plaintext {
        let Some(target) = targets(&patchbay).into_iter().find(|t| t.connector == name) else {
            bail!(
                "no OAuth connector named {} in the catalog (see `patchbay status`)",
                one_line(&name)
            );
        };
        let deleted = delete_plaintext(&patchbay, &target, &sources)?;
        if args.json {
            write_json!(
                &mut *out,
                &serde_json::json!({ "connector": name, "deleted": deleted })
            )?;
        } else if deleted.is_empty() {
            writeln!(
                out,
                "mcp-remote keeps no files for {}: nothing to delete.",
                one_line(&name)
            )?;
        } else {
            writeln!(
                out,
                "Deleted mcp-remote's plaintext files for {}:",
                one_line(&name)
            )?;
            for file in &deleted {
                writeln!(out, "  {}", file.display())?;
            }
        }
        return Ok(ExitCode::SUCCESS);
    }

    let targets = targets(&patchbay);
    let report = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(import(
            &patchbay,
            &targets,
            &sources,
            &ImportOptions::default(),
        ))?;
    for error in &report.errors {
        crate::warn(&format!("warning: cannot read {error}"));
    }
    if args.json {
        write_json!(&mut *out, &report)?;
        return Ok(ExitCode::SUCCESS);
    }
    if report.adopted.is_empty() {
        writeln!(
            out,
            "No token to adopt: Claude Code, Codex and mcp-remote hold none Patchbay lacks for the catalog's connectors."
        )?;
    }
    for a in &report.adopted {
        let validity = match a.expires_at {
            Some(at) if at > patchbay.now() => format!("valid until {}", when(at)),
            Some(_) => "expired".to_string(),
            None => "no stated expiry".to_string(),
        };
        let renewal = if a.renewable {
            format!("renews with {}'s client", a.source.display_name())
        } else {
            "does not renew by itself".to_string()
        };
        writeln!(
            out,
            "Adopted {} from {} ({validity}; {renewal}).",
            one_line(&a.connector),
            a.source.display_name()
        )?;
        if let Some(note) = &a.note {
            writeln!(out, "  {}", one_line(note))?;
        }
        if !a.plaintext_files.is_empty() {
            writeln!(out, "  mcp-remote still keeps it in plaintext:")?;
            for file in &a.plaintext_files {
                writeln!(out, "    {}", file.display())?;
            }
            writeln!(
                out,
                "  While both hold the pair, whichever refreshes first spends it for the other. Delete them with `patchbay import --delete-plaintext {}`.",
                one_line(&a.connector)
            )?;
        }
    }
    let held = report
        .not_adopted
        .iter()
        .filter(|n| n.reason.contains("already holds"))
        .count();
    if held > 0 {
        writeln!(
            out,
            "Left alone: {held} connector{} Patchbay already holds a credential for.",
            if held == 1 { "" } else { "s" }
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

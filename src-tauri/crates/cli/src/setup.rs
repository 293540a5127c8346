//! `patchbay enable`, `disable`, `manage` and `gallery`: which connectors are the user's own
//! (in use), and the rest of the catalog to add from.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use patchbay_core::Patchbay;
use patchbay_status::{GalleryEntry, Needs};

use crate::terminal::one_line;

#[derive(Args)]
pub struct NameArgs {
    /// The connector's name (`patchbay gallery` lists those not in use).
    pub name: String,
}

#[derive(Args)]
pub struct GalleryArgs {
    /// Print the gallery entries as JSON (docs/status-json.md, `gallery`).
    #[arg(long)]
    pub json: bool,
    /// Only entries whose name, title or description contains this (any case).
    pub search: Option<String>,
}

pub fn enable(patchbay: &Patchbay, args: NameArgs, out: &mut impl Write) -> Result<ExitCode> {
    patchbay.enable(&args.name)?;
    let report = patchbay.status();
    let name = one_line(&args.name);
    match report.connector(&args.name) {
        Some(row) => {
            writeln!(out, "{name} is in use: {}.", one_line(&row.label))?;
            if row.needs_attention {
                writeln!(out, "  {}", one_line(&row.detail))?;
            }
        }
        None => writeln!(
            out,
            "{name} was added to {}.",
            patchbay.writable_catalog().display()
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

pub fn disable(patchbay: &Patchbay, args: NameArgs, out: &mut impl Write) -> Result<ExitCode> {
    patchbay.disable(&args.name)?;
    writeln!(
        out,
        "{} is no longer in use (\"enabled\": false in {}); `patchbay enable {}` brings it back.",
        one_line(&args.name),
        patchbay.writable_catalog().display(),
        one_line(&args.name)
    )?;
    Ok(ExitCode::SUCCESS)
}

pub fn manage(patchbay: &Patchbay, args: NameArgs, out: &mut impl Write) -> Result<ExitCode> {
    patchbay.manage(&args.name)?;
    writeln!(
        out,
        "{} is now in {}; any secret from the client's config is in the vault.",
        one_line(&args.name),
        patchbay.writable_catalog().display()
    )?;
    Ok(ExitCode::SUCCESS)
}

pub fn gallery(patchbay: &Patchbay, args: GalleryArgs, out: &mut impl Write) -> Result<ExitCode> {
    let report = patchbay.status();
    let wanted = args.search.as_deref().map(str::to_lowercase);
    let shown: Vec<&GalleryEntry> = report
        .gallery
        .iter()
        .filter(|g| match &wanted {
            None => true,
            Some(w) => [Some(&g.name), Some(&g.title), g.description.as_ref()]
                .into_iter()
                .flatten()
                .any(|text| text.to_lowercase().contains(w.as_str())),
        })
        .collect();
    if args.json {
        write_json!(&mut *out, &shown)?;
        return Ok(ExitCode::SUCCESS);
    }
    if shown.is_empty() {
        writeln!(out, "Nothing in the gallery matches.")?;
        return Ok(ExitCode::SUCCESS);
    }
    for entry in shown {
        let needs = match entry.needs {
            Needs::Oauth => "sign in".to_owned(),
            Needs::Secret => format!("needs {}", entry.variables.join(", ")),
            Needs::Nothing => "ready to use".to_owned(),
        };
        writeln!(
            out,
            "{}  {} ({}; {needs}){}",
            one_line(&entry.name),
            one_line(&entry.title),
            one_line(&entry.transport),
            if entry.disabled {
                "  [enabled: false]"
            } else {
                ""
            }
        )?;
    }
    writeln!(out, "\nAdd one with `patchbay enable NAME`.")?;
    Ok(ExitCode::SUCCESS)
}

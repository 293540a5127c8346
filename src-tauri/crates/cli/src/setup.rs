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

/// `patchbay add-custom NAME --url URL` or `patchbay add-custom NAME --command CMD [--arg A]...`.
#[derive(Args)]
#[command(group(clap::ArgGroup::new("server").required(true).args(["url", "command"])))]
pub struct AddCustomArgs {
    /// The new connector's name: letters, digits, - and _.
    pub name: String,
    /// A remote server's URL (streamable HTTP): https, or http on localhost.
    #[arg(long)]
    pub url: Option<String>,
    /// A local server's command (stdio).
    #[arg(long)]
    pub command: Option<String>,
    /// An argument to the command; repeat for each, in order.
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// A literal `NAME=VALUE` environment variable (stdio) or header (remote); repeatable.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub values: Vec<String>,
    /// An environment variable or header whose value is a secret: asked for without echo (or
    /// read from standard input), kept in the vault; repeatable.
    #[arg(long = "secret", value_name = "NAME")]
    pub secrets: Vec<String>,
    /// The title shown in the window.
    #[arg(long)]
    pub title: Option<String>,
    /// For a URL: first ask the server (one request) whether it wants OAuth.
    #[arg(long)]
    pub check: bool,
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

pub fn add_custom(
    patchbay: &Patchbay,
    args: AddCustomArgs,
    read_secret: impl Fn(&str) -> Result<patchbay_vault::Secret>,
    out: &mut impl Write,
) -> Result<ExitCode> {
    use patchbay_core::custom::{CustomConnector, CustomServer, CustomValue, RemoteAuth};
    let mut values = Vec::new();
    for pair in &args.values {
        let Some((name, value)) = pair.split_once('=') else {
            anyhow::bail!("--set {pair:?}: write NAME=VALUE");
        };
        values.push(CustomValue {
            name: name.to_owned(),
            value: patchbay_vault::Secret::new(value.to_owned()),
            secret: false,
        });
    }
    for name in &args.secrets {
        values.push(CustomValue {
            name: name.clone(),
            value: read_secret(name)?,
            secret: true,
        });
    }
    let server = match (&args.url, &args.command) {
        (Some(url), _) => {
            if args.check {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                let found = runtime.block_on(patchbay_core::custom::probe_remote(url))?;
                let said = match found {
                    RemoteAuth::OAuth => "it asks for OAuth: authorize it next".to_owned(),
                    RemoteAuth::Open => "it answered without asking for a credential".to_owned(),
                    RemoteAuth::Unknown { detail } => {
                        format!("could not tell whether it wants OAuth: {detail}")
                    }
                };
                writeln!(out, "{}: {said}.", one_line(url))?;
            }
            CustomServer::Remote {
                url: url.clone(),
                headers: values,
            }
        }
        (None, Some(command)) => CustomServer::Stdio {
            command: command.clone(),
            args: args.args.clone(),
            env: values,
        },
        (None, None) => unreachable!("clap requires --url or --command"),
    };
    let added = patchbay.add_custom_connector(&CustomConnector {
        name: args.name.clone(),
        title: args.title.clone(),
        server,
    })?;
    writeln!(
        out,
        "{} is now in {}, in use.",
        one_line(&added.name),
        patchbay.writable_catalog().display()
    )?;
    if !added.secrets.is_empty() {
        writeln!(out, "In the vault: {}.", added.secrets.join(", "))?;
    }
    writeln!(out, "Next: patchbay status {}", one_line(&added.name))?;
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

//! `patchbay`: the command-line face of Patchbay's core, for terminals, SSH and tests.
//! Every command is a call into patchbay-core; this file only parses arguments and prints.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use patchbay_catalog::CredentialKey;
use patchbay_core::{Patchbay, Paths};
use patchbay_vault::Secret;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

mod table;

#[derive(Parser)]
#[command(
    name = "patchbay",
    version,
    about = "See and fix the status of your agents' MCP connectors.",
    after_help = "Exit codes of `status`: 0 nothing needs attention, 1 something does, 2 error."
)]
struct Cli {
    /// Keep all data (user catalog, database) in DIR instead of the platform's directories.
    #[arg(long, global = true, value_name = "DIR", env = "PATCHBAY_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Use this catalog file alone instead of the default and user catalogs.
    #[arg(long, global = true, value_name = "FILE")]
    catalog: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Every connector's state, problems first.
    Status {
        /// Print the documented JSON (docs/status-json.md) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The servers an agent can start now, then the Unavailable roster.
    Offered {
        #[arg(long)]
        json: bool,
    },
    /// `${VAR}` values kept in the OS keychain-backed vault.
    Secret {
        #[command(subcommand)]
        command: SecretCommand,
    },
    /// Credentials stored under a key the catalog no longer computes.
    Unclaimed {
        #[command(subcommand)]
        command: UnclaimedCommand,
    },
    /// Where Patchbay keeps its files.
    Paths,
}

#[derive(Subcommand)]
enum SecretCommand {
    /// Store NAME's value: typed without echo, or read from standard input when piped.
    Set { name: String },
    /// Name the stored values (never the values).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Forget NAME's value.
    Delete { name: String },
    /// Discard every sealed secret (variables and credentials) when the vault's key is lost.
    /// The keychain item is left alone. Needs --yes.
    Reset {
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Subcommand)]
enum UnclaimedCommand {
    /// List them.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Delete the credential stored under KEY (for example `linear|0123456789abcdef`).
    Delete { key: String },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("patchbay: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn open(data_dir: Option<PathBuf>, catalog: Option<PathBuf>) -> Result<Patchbay> {
    let paths = Paths::resolve(data_dir)?.with_catalog_override(catalog)?;
    let db = paths.database();
    Patchbay::open(paths)
        .with_context(|| format!("cannot open Patchbay's data at {}", db.display()))
}

fn run(cli: Cli) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Status { json } => {
            let report = open(cli.data_dir, cli.catalog)?.status();
            if json {
                serde_json::to_writer_pretty(&mut out, &report)?;
                writeln!(out)?;
            } else {
                write!(out, "{}", table::status(&report))?;
            }
            Ok(if report.any_attention() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Offered { json } => {
            let offered = open(cli.data_dir, cli.catalog)?.offered();
            if json {
                serde_json::to_writer_pretty(&mut out, &offered)?;
                writeln!(out)?;
            } else {
                write!(out, "{}", offered.to_markdown())?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Secret { command } => {
            let patchbay = open(cli.data_dir, None)?;
            match command {
                SecretCommand::Set { name } => {
                    let value = read_secret(&name)?;
                    patchbay.set_secret(&name, &value)?;
                    writeln!(out, "Stored {name} in the vault.")?;
                }
                SecretCommand::List { json } => {
                    let names = patchbay.secret_names()?;
                    if json {
                        serde_json::to_writer_pretty(&mut out, &names)?;
                        writeln!(out)?;
                    } else if names.is_empty() {
                        writeln!(
                            out,
                            "No secrets stored. Add one with `patchbay secret set NAME`."
                        )?;
                    } else {
                        for info in names {
                            writeln!(out, "{}\t(set {})", info.name, table::when(info.updated_at))?;
                        }
                    }
                }
                SecretCommand::Delete { name } => {
                    if !patchbay.delete_secret(&name)? {
                        bail!("no secret named {name} is stored");
                    }
                    writeln!(out, "Deleted {name}.")?;
                }
                SecretCommand::Reset { yes } => {
                    if !yes {
                        bail!("this discards every stored secret and credential; run `patchbay secret reset --yes` to go ahead");
                    }
                    let discarded = patchbay.reset_vault()?;
                    writeln!(out, "Discarded {discarded} sealed secrets. Store them again with `patchbay secret set NAME`.")?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Unclaimed { command } => {
            let patchbay = open(cli.data_dir, cli.catalog)?;
            match command {
                UnclaimedCommand::List { json } => {
                    let report = patchbay.status();
                    if json {
                        serde_json::to_writer_pretty(&mut out, &report.unclaimed)?;
                        writeln!(out)?;
                    } else if report.unclaimed.is_empty() {
                        writeln!(out, "No unclaimed credentials.")?;
                    } else {
                        write!(out, "{}", table::unclaimed(&report))?;
                    }
                }
                UnclaimedCommand::Delete { key } => {
                    patchbay.delete_unclaimed(&CredentialKey(key.clone()))?;
                    writeln!(out, "Deleted the credential {key}.")?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Paths => {
            let paths = Paths::resolve(cli.data_dir)?.with_catalog_override(cli.catalog)?;
            writeln!(out, "user catalog:    {}", paths.user_catalog().display())?;
            writeln!(out, "database:        {}", paths.database().display())?;
            let default = match &paths.default_catalog {
                patchbay_catalog::CatalogSource::File { path, .. } => path.display().to_string(),
                patchbay_catalog::CatalogSource::Embedded => "<built-in>".into(),
            };
            writeln!(out, "default catalog: {default}")?;
            writeln!(
                out,
                "keychain item:   service \"{}\", account \"{}\"",
                patchbay_core::paths::KEYCHAIN_SERVICE,
                paths.keychain_account
            )?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Typed without echo at a terminal; read whole from a pipe (one trailing newline dropped).
fn read_secret(name: &str) -> Result<Secret> {
    let value = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("Value for {name} (not shown): "))
            .context("cannot read the value from the terminal")?
    } else {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the value from standard input")?;
        if text.ends_with('\n') {
            text.pop();
            if text.ends_with('\r') {
                text.pop();
            }
        }
        text
    };
    if value.is_empty() {
        bail!("the value for {name} is empty; nothing was stored");
    }
    Ok(Secret::new(value))
}

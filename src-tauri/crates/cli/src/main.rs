//! `patchbay`: the command-line face of Patchbay's core, for terminals, SSH and tests.
//! Every command is a call into patchbay-core; this file only parses arguments and prints.

use anyhow::{bail, Context, Result};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use patchbay_catalog::CredentialKey;
use patchbay_core::bridges::Added;
use patchbay_core::setup::ClientSetup;
use patchbay_core::{
    Authorizer, AuthorizerOptions, Bridges, Completion, CoreError, Patchbay, Paths, StartOptions,
};
use patchbay_oauth::OAuthError;
use patchbay_runtimes::reconcile::runtime_id;
use patchbay_runtimes::{Runtime, WriteOutcome};
use patchbay_vault::Secret;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use terminal::Terminal;

#[macro_use]
mod terminal;
mod add_to;
mod autostart;
mod check;
mod connect;
mod gateway;
mod import;
mod paths;
mod refresh;
mod setup;
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
    /// Authorize Patchbay on a connector's consent screen (OAuth) and store the credential.
    Authorize {
        /// The connector's name in the catalog.
        name: String,
        /// Print the consent URL instead of opening the system browser (SSH, containers).
        #[arg(long)]
        no_browser: bool,
        /// The loopback receiver's port.
        #[arg(long, value_name = "N", default_value_t = patchbay_oauth::DEFAULT_PORT)]
        port: u16,
    },
    /// Test connectors for real: the MCP handshake and tools/list, transport fallback, health.
    Check(check::CheckArgs),
    /// Adopt the tokens already on this machine (Claude Code, Codex, mcp-remote) for connectors
    /// Patchbay holds no credential for, with the client they were issued to.
    Import(import::ImportArgs),
    /// Where Patchbay keeps its files, and where it reads each runtime's and client's.
    Paths(paths::PathsArgs),
    /// The agent runtimes found (Claude Code, Codex) and the connectors bridged to each.
    Runtimes {
        #[arg(long)]
        json: bool,
    },
    /// Put connectors' credentials where the runtimes read them.
    Bridge {
        #[command(subcommand)]
        command: BridgeCommand,
    },
    /// Renew credentials now: one pass (what the app does every 30 minutes), or one connector.
    Refresh(refresh::RefreshArgs),
    /// A connector's recent refresh attempts: time, class, HTTP status, summary, detail.
    History(refresh::HistoryArgs),
    /// Revoke a connector's tokens and remove them from the vault and every runtime.
    Disconnect(refresh::DisconnectArgs),
    /// Tell Patchbay a runtime's refresh failed (e.g. from a hook); a rejected refresh token
    /// retires the credential everywhere.
    RuntimeError(refresh::RuntimeErrorArgs),
    /// Put a catalog connector in use (from the gallery), as the window's "Add" does.
    Enable(setup::NameArgs),
    /// Take a connector out of use, even where a client configures it (`"enabled": false`).
    Disable(setup::NameArgs),
    /// Copy a server a client configures into your catalog; its secrets go into the vault.
    Manage(setup::NameArgs),
    /// Add a server the catalog lacks: a URL (remote) or a command (stdio); secrets go into the vault.
    AddCustom(setup::AddCustomArgs),
    /// The catalog connectors not in use, and what each needs.
    Gallery(setup::GalleryArgs),
    /// Bridge an MCP client that launches commands to a remote connector over stdio, with the
    /// vault's credential injected (a drop-in for `npx mcp-remote URL`).
    Connect(connect::ConnectArgs),
    /// Add a connector to Claude Code, Codex, Gemini CLI, Cursor, VS Code, Claude Desktop or
    /// Windsurf, through Patchbay.
    AddTo(add_to::AddToArgs),
    /// Switch a client's `npx mcp-remote URL` entry to Patchbay, keeping its name.
    Switch(add_to::SwitchArgs),
    /// The loopback MCP gateway: `serve` it headless, manage its `client`s.
    Gateway(gateway::GatewayArgs),
    /// Start at login: `on` starts Patchbay in the tray when you log in, `off` stops that; with
    /// no argument, whether it does (the window's Start at login switch).
    Autostart(autostart::AutostartArgs),
}

#[derive(Subcommand)]
enum BridgeCommand {
    /// Configure the catalog connector NAME in a runtime, as its own `mcp add` would.
    Add {
        name: String,
        #[arg(long, value_enum)]
        runtime: RuntimeArg,
    },
    /// Adopt what the runtimes rotated, then write every stored credential through to every
    /// runtime it is bridged to.
    Sync {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum RuntimeArg {
    Claude,
    Codex,
}

impl From<RuntimeArg> for Runtime {
    fn from(r: RuntimeArg) -> Runtime {
        match r {
            RuntimeArg::Claude => Runtime::ClaudeCode,
            RuntimeArg::Codex => Runtime::Codex,
        }
    }
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

/// The commands as `patchbay --help` lists them: by what one is doing (24 in one list were hard
/// to scan). Every command is in exactly one group (the test below).
const COMMAND_GROUPS: &[(&str, &[&str])] = &[
    (
        "See what needs attention",
        &[
            "status", "check", "history", "gallery", "offered", "runtimes", "paths",
        ],
    ),
    (
        "Set up a connector",
        &[
            "enable",
            "authorize",
            "secret",
            "manage",
            "add-custom",
            "disable",
            "disconnect",
        ],
    ),
    (
        "Use connectors in your clients",
        &["add-to", "switch", "connect", "gateway", "bridge"],
    ),
    (
        "Keep credentials working",
        &[
            "refresh",
            "import",
            "unclaimed",
            "runtime-error",
            "autostart",
        ],
    ),
];

/// The command line with its commands listed by [`COMMAND_GROUPS`].
fn command_line() -> clap::Command {
    let command = Cli::command();
    let width = command
        .get_subcommands()
        .map(|c| c.get_name().len())
        .max()
        .unwrap_or(0);
    let mut listing = String::new();
    for (heading, names) in COMMAND_GROUPS {
        listing.push_str(&format!("{heading}:\n"));
        for name in *names {
            let about = command
                .find_subcommand(name)
                .and_then(|c| c.get_about())
                .map(|a| a.to_string())
                .unwrap_or_default();
            listing.push_str(&format!("  {name:<width$}  {about}\n"));
        }
        listing.push('\n');
    }
    listing.push_str(&format!(
        "  {:<width$}  Print this message or the help of the given command\n\n",
        "help"
    ));
    command.help_template(format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{listing}Options:\n{{options}}{{after-help}}"
    ))
}

fn main() -> ExitCode {
    adopt_session_bus();
    let mut cli = Cli::from_arg_matches(&command_line().get_matches()).unwrap_or_else(|e| e.exit());
    with_connector_names(&mut cli);
    // What a killed run left beside the runtimes' and clients' files goes first (issue 23).
    patchbay_core::bridges::sweep_left_behind();
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            warn(&format!("error: {error:#}"));
            ExitCode::from(2)
        }
    }
}

/// Connector names as typed in a terminal: `patchbay authorize Notion` means `notion` when only
/// case tells them apart and one connector matches ([`patchbay_catalog::Catalog::name_as_typed`]).
/// Anything else is left as typed, for the command's own error ("did you mean"). `connect` is
/// left alone: clients launch it with the name they were given.
fn with_connector_names(cli: &mut Cli) {
    let typed = match &mut cli.command {
        Command::Authorize { name, .. }
        | Command::Bridge {
            command: BridgeCommand::Add { name, .. },
        } => Some(name),
        Command::History(args) => Some(&mut args.name),
        Command::Disconnect(args) => Some(&mut args.name),
        Command::RuntimeError(args) => Some(&mut args.name),
        Command::Enable(args) | Command::Disable(args) | Command::Manage(args) => {
            Some(&mut args.name)
        }
        Command::AddTo(args) => Some(&mut args.name),
        Command::Refresh(args) => args.name.as_mut(),
        Command::Check(args) => args.name.as_mut(),
        _ => None,
    };
    let Some(typed) = typed else { return };
    let Ok(patchbay) = open_reading(cli.data_dir.clone(), cli.catalog.clone()) else {
        return;
    };
    if let Some(name) = patchbay.catalog().name_as_typed(typed) {
        if name != typed.as_str() {
            *typed = name.to_owned();
        }
    }
}

/// A client that launched `patchbay connect` with a stripped environment left out the session
/// bus's address, so the keychain would not answer: the bus where libdbus and systemd put it is
/// adopted, before any thread starts (setting a variable later would race readers).
fn adopt_session_bus() {
    #[cfg(target_os = "linux")]
    if let Some(address) = patchbay_vault::session_bus::fallback_for_this_process() {
        std::env::set_var(patchbay_vault::session_bus::ADDRESS_VARIABLE, address);
    }
}

fn open(data_dir: Option<PathBuf>, catalog: Option<PathBuf>) -> Result<Patchbay> {
    let reads_clients = catalog.is_none();
    let paths = Paths::resolve(data_dir)?.with_catalog_override(catalog)?;
    let db = paths.database();
    Patchbay::open(paths)
        .map(|p| with_clients(p, reads_clients))
        .with_context(|| format!("cannot open Patchbay's data at {}", db.display()))
}

/// The clients' configs count too, unless a `--catalog` file is used alone.
fn with_clients(patchbay: Patchbay, reads_clients: bool) -> Patchbay {
    match ClientSetup::from_env().filter(|_| reads_clients) {
        Some(setup) => patchbay.with_clients(setup),
        None => patchbay,
    }
}

/// For commands that only read: works on a data directory that cannot be written.
fn open_reading(data_dir: Option<PathBuf>, catalog: Option<PathBuf>) -> Result<Patchbay> {
    let reads_clients = catalog.is_none();
    let paths = Paths::resolve(data_dir)?.with_catalog_override(catalog)?;
    let db = paths.database();
    Patchbay::open_for_reading(paths)
        .map(|p| with_clients(p, reads_clients))
        .with_context(|| format!("cannot read Patchbay's data at {}", db.display()))
}

/// Every catalog file could be read; otherwise an error naming each one that could not. Asked
/// before the data directory is opened: the catalog is the first thing wrong then.
fn catalog_readable(data_dir: &Option<PathBuf>, catalog: &Option<PathBuf>) -> Result<()> {
    let paths = Paths::resolve(data_dir.clone())?.with_catalog_override(catalog.clone())?;
    let errors: Vec<String> = patchbay_catalog::load(&paths.catalog_sources())
        .sources
        .iter()
        .filter_map(|s| s.error.as_ref().map(ToString::to_string))
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    bail!("{}", errors.join("\nerror: "))
}

fn run(cli: Cli) -> Result<ExitCode> {
    let mut out = Terminal::new(std::io::stdout().lock());
    match cli.command {
        Command::Status { json } => {
            // Adopts what a runtime rotated first, and fills in each connector's bridges.
            let report = Bridges::new(Arc::new(open_reading(cli.data_dir, cli.catalog)?)).status();
            if json {
                write_json!(&mut out, &report)?;
            } else {
                write!(out, "{}", table::status(&report))?;
            }
            // The rows of a catalog that could not be read are missing: that is an error (2),
            // never a report that merely needs attention.
            let catalog_errors: Vec<&str> = report
                .catalog
                .sources
                .iter()
                .filter_map(|s| s.error.as_deref())
                .collect();
            if !catalog_errors.is_empty() {
                out.flush()?;
                for error in catalog_errors {
                    warn(&format!("error: {error}"));
                }
                return Ok(ExitCode::from(2));
            }
            Ok(if report.any_attention() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Offered { json } => {
            // An agent told "(none)" would believe there is nothing to start: refuse instead.
            catalog_readable(&cli.data_dir, &cli.catalog)?;
            let patchbay = open_reading(cli.data_dir, cli.catalog)?;
            let offered = patchbay.offered();
            if json {
                write_json!(&mut out, &offered)?;
            } else {
                write!(
                    out,
                    "{}",
                    terminal::offered_for_terminal(offered).to_markdown()
                )?;
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
                        write_json!(&mut out, &names)?;
                    } else if names.is_empty() {
                        writeln!(
                            out,
                            "No secrets stored. Add one with `patchbay secret set NAME`."
                        )?;
                    } else {
                        for info in names {
                            writeln!(
                                out,
                                "{}  (set {})",
                                terminal::one_line(&info.name),
                                table::when(info.updated_at)
                            )?;
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
                        write_json!(&mut out, &report.unclaimed)?;
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
        Command::Authorize {
            name,
            no_browser,
            port,
        } => {
            let patchbay = Arc::new(open(cli.data_dir, cli.catalog)?);
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            runtime.block_on(authorize(patchbay, &name, no_browser, port))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Runtimes { json } => {
            let bridges = Bridges::new(Arc::new(open_reading(cli.data_dir, cli.catalog)?));
            let runtimes = bridges.runtimes();
            if json {
                write_json!(&mut out, &runtimes)?;
                return Ok(ExitCode::SUCCESS);
            }
            if runtimes.is_empty() {
                writeln!(out, "No home directory: no runtime can be found.")?;
            }
            for r in runtimes {
                writeln!(
                    out,
                    "{} ({}){}",
                    r.display_name,
                    if r.found { "found" } else { "not found" },
                    r.error
                        .map(|e| format!(": {}", terminal::one_line(&e.to_string())))
                        .unwrap_or_default()
                )?;
                for config in &r.config {
                    writeln!(out, "  config:      {}", config.display())?;
                }
                writeln!(out, "  credentials: {}", r.credential_store)?;
                writeln!(out, "  servers:     {} remote", r.servers)?;
                if r.bridges.is_empty() {
                    writeln!(out, "  bridged:     none")?;
                }
                for b in r.bridges {
                    writeln!(
                        out,
                        "  bridged:     {} as \"{}\" ({})",
                        terminal::one_line(&b.connector),
                        terminal::one_line(&b.server_name),
                        b.credential_key
                            .map(|k| k.0)
                            .unwrap_or_else(|| "key unknown: a ${VAR} does not resolve".into())
                    )?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bridge { command } => {
            let bridges = Bridges::new(Arc::new(open(cli.data_dir, cli.catalog)?));
            match command {
                BridgeCommand::Add { name, runtime } => {
                    let runtime = Runtime::from(runtime);
                    match bridges.add(&name, runtime)? {
                        Added::Added => {
                            writeln!(out, "Added {name} to {}.", runtime.display_name())?
                        }
                        Added::AlreadyPresent => {
                            writeln!(out, "{} already has {name}.", runtime.display_name())?
                        }
                    }
                    if let Some(done) = bridges.write_through(&name)? {
                        let written = done
                            .outcomes
                            .iter()
                            .filter(|(_, _, o)| matches!(o, Ok(WriteOutcome::Written)))
                            .count();
                        if written > 0 {
                            writeln!(out, "Wrote its stored credential there.")?;
                        }
                    }
                }
                BridgeCommand::Sync { json } => {
                    let adopted = bridges.adopt_all();
                    let synced = bridges.sync()?;
                    let mut failed = false;
                    let mut lines = Vec::new();
                    for a in &adopted {
                        lines.push(serde_json::json!({
                            "connector_key": a.vault_key.as_str(),
                            "runtime": runtime_id(a.runtime),
                            "outcome": "adopted",
                        }));
                    }
                    for (connector, done) in &synced {
                        for (runtime, key, outcome) in &done.outcomes {
                            let (what, error) = match outcome {
                                Ok(WriteOutcome::Written) => ("written", None),
                                Ok(WriteOutcome::KeptFresher) => ("kept_fresher", None),
                                Err(e) => {
                                    failed = true;
                                    ("failed", Some(e.to_string()))
                                }
                            };
                            lines.push(serde_json::json!({
                                "connector": connector,
                                "runtime": runtime_id(*runtime),
                                "credential_key": key.as_str(),
                                "outcome": what,
                                "error": error,
                            }));
                        }
                    }
                    if json {
                        write_json!(&mut out, &lines)?;
                    } else if lines.is_empty() {
                        writeln!(out, "Nothing to bridge: no stored credential belongs to a connector a runtime has configured.")?;
                    } else {
                        for l in &lines {
                            writeln!(
                                out,
                                "{} {} {} {}",
                                l["runtime"].as_str().unwrap_or(""),
                                l["connector"]
                                    .as_str()
                                    .or(l["connector_key"].as_str())
                                    .unwrap_or(""),
                                l["outcome"].as_str().unwrap_or(""),
                                l["error"].as_str().unwrap_or("")
                            )?;
                        }
                    }
                    if failed {
                        return Ok(ExitCode::from(1));
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Refresh(args) => {
            refresh::refresh(open(cli.data_dir, cli.catalog)?, args, &mut out)
        }
        Command::History(args) => {
            refresh::history(open_reading(cli.data_dir, cli.catalog)?, args, &mut out)
        }
        Command::Disconnect(args) => {
            refresh::disconnect(open(cli.data_dir, cli.catalog)?, args, &mut out)
        }
        Command::RuntimeError(args) => {
            refresh::runtime_error(open(cli.data_dir, cli.catalog)?, args, &mut out)
        }
        Command::Enable(args) => setup::enable(&open(cli.data_dir, cli.catalog)?, args, &mut out),
        Command::Disable(args) => setup::disable(&open(cli.data_dir, cli.catalog)?, args, &mut out),
        Command::Manage(args) => setup::manage(&open(cli.data_dir, cli.catalog)?, args, &mut out),
        Command::AddCustom(args) => setup::add_custom(
            &open(cli.data_dir, cli.catalog)?,
            args,
            read_secret,
            &mut out,
        ),
        Command::Connect(args) => connect::connect(cli.data_dir, cli.catalog, args),
        Command::AddTo(args) => add_to::add_to(&open(cli.data_dir, cli.catalog)?, args, &mut out),
        Command::Switch(args) => add_to::switch(&open(cli.data_dir, cli.catalog)?, args, &mut out),
        Command::Gateway(args) => gateway::run(open(cli.data_dir, cli.catalog)?, args, &mut out),
        Command::Gallery(args) => {
            catalog_readable(&cli.data_dir, &cli.catalog)?;
            setup::gallery(&open_reading(cli.data_dir, cli.catalog)?, args, &mut out)
        }
        Command::Check(args) => {
            catalog_readable(&cli.data_dir, &cli.catalog)?;
            check::run(open(cli.data_dir, cli.catalog)?, args, &mut out)
        }
        Command::Import(args) => {
            catalog_readable(&cli.data_dir, &cli.catalog)?;
            import::run(open(cli.data_dir, cli.catalog)?, args, &mut out)
        }
        Command::Paths(args) => paths::run(cli.data_dir, cli.catalog, args, &mut out),
        Command::Autostart(args) => autostart::run(args, &mut out),
    }
}

/// How long `authorize` waits for the browser to come back to the receiver.
const BROWSER_WAIT: Duration = Duration::from_secs(10 * 60);

async fn authorize(patchbay: Arc<Patchbay>, name: &str, no_browser: bool, port: u16) -> Result<()> {
    let auth = Authorizer::new(
        patchbay.clone(),
        AuthorizerOptions {
            port,
            ..AuthorizerOptions::from_env()?
        },
    );
    auth.set_bridges(Arc::new(Bridges::new(patchbay)));
    let result = authorize_once(&auth, name, no_browser).await;
    // A registration the server forgot was dropped: register anew, once.
    let result = match result {
        Err(CoreError::OAuth(OAuthError::RegistrationForgotten { .. })) => {
            warn("The server no longer knows Patchbay's registration; registering again.");
            authorize_once(&auth, name, no_browser).await
        }
        // Nothing registers Patchbay there: ask for a client made at the provider, once.
        Err(CoreError::OAuth(OAuthError::NoClient {
            issuer,
            redirect_uri,
            ..
        })) if std::io::stdin().is_terminal() => {
            ask_for_client(&auth, name, &issuer, &redirect_uri)?;
            authorize_once(&auth, name, no_browser).await
        }
        other => other,
    };
    auth.shutdown().await;
    result?;
    say(&format!(
        "Authorized {}: the credential is stored in the vault.",
        terminal::one_line(name)
    ));
    Ok(())
}

/// Asks at the terminal for a client registered at `issuer` by hand, and keeps it in the vault.
fn ask_for_client(
    auth: &Authorizer,
    name: &str,
    issuer: &str,
    redirect_uri: &str,
) -> Result<(), CoreError> {
    say(&format!(
        "{} offers no way to register Patchbay. Create an OAuth client there (a public client, with the redirect URI {redirect_uri}), then enter it here.",
        terminal::one_line(issuer)
    ));
    eprint!("Client id for {}: ", terminal::one_line(name));
    let _ = std::io::stderr().flush();
    let mut id = String::new();
    std::io::stdin()
        .read_line(&mut id)
        .map_err(|e| CoreError::io("read", std::path::Path::new("standard input"), e))?;
    let secret =
        rpassword::prompt_password("Client secret (not shown; empty for a public client): ")
            .map_err(|e| CoreError::io("read", std::path::Path::new("the terminal"), e))?;
    auth.enter_client(name, &id, Some(Secret::new(secret)))
}

async fn authorize_once(auth: &Authorizer, name: &str, no_browser: bool) -> Result<(), CoreError> {
    let started = auth
        .start(
            name,
            StartOptions {
                open_browser: !no_browser,
                ..StartOptions::default()
            },
        )
        .await?;
    if let Some(notice) = &started.notice {
        warn(notice);
    }
    if no_browser {
        say(&format!(
            "Open this address in a browser and approve access:\n\n  {}\n",
            started.authorize_url
        ));
    } else {
        say(&format!(
            "Opened the consent page in your browser. If it did not open, visit:\n\n  {}\n",
            started.authorize_url
        ));
    }
    match &started.completion {
        Completion::Receiver { .. } => {
            say("Waiting for the browser…");
            auth.wait_for(name, BROWSER_WAIT).await
        }
        Completion::PasteBack { redirect_uri, why } => {
            say(&format!("Finish by pasting ({why})."));
            say(&format!(
                "After approving, the browser goes to {redirect_uri}; paste that whole address (or just the code) here:"
            ));
            let line = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).map(|_| line)
            })
            .await
            .map_err(|e| CoreError::TaskFailed {
                task: "reading standard input",
                message: e.to_string(),
            })?
            .map_err(|e| CoreError::io("read", std::path::Path::new("standard input"), e))?;
            auth.complete_pasted(name, &line).await
        }
    }
}

/// A line to standard output, control characters escaped.
fn say(text: &str) {
    let mut out = Terminal::new(std::io::stdout().lock());
    let _ = writeln!(out, "{text}");
}

/// A line to standard error, control characters escaped.
fn warn(text: &str) {
    let mut err = Terminal::new(std::io::stderr().lock());
    let _ = writeln!(err, "{text}");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_lists_every_command_once_in_its_group() {
        let command = Cli::command();
        let grouped: Vec<&str> = COMMAND_GROUPS
            .iter()
            .flat_map(|(_, names)| names.iter().copied())
            .collect();
        for sub in command.get_subcommands().filter(|c| !c.is_hide_set()) {
            let times = grouped.iter().filter(|n| **n == sub.get_name()).count();
            assert_eq!(times, 1, "{} is listed {times} times", sub.get_name());
        }
        for name in &grouped {
            assert!(command.find_subcommand(name).is_some(), "no command {name}");
        }
        let help = command_line().render_help().to_string();
        assert!(help.contains("Set up a connector:\n  enable "), "{help}");
        assert!(help.contains("--data-dir <DIR>"), "{help}");
        assert!(!help.contains("Commands:"), "{help}");
    }
}

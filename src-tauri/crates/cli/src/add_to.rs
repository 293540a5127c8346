//! `patchbay add-to CLIENT NAME` ("Add to Cursor / VS Code / Claude Desktop / Windsurf") and
//! `patchbay switch CLIENT SERVER` (an `npx mcp-remote URL` entry switched to Patchbay): thin
//! calls into patchbay_core::client_config, plus the gateway client secret for `--via gateway`
//! (patchbay_gateway::Clients: the core does not depend on the gateway).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use patchbay_core::client_config::{self, Route};
use patchbay_core::Patchbay;
use patchbay_gateway::{Clients, ClientsError, DEFAULT_PORT};
use patchbay_runtimes::clients::write::{self, Change, Conflict, Written};
use patchbay_runtimes::clients::Client;
use patchbay_vault::Secret;

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
    /// cursor, vscode, claude-desktop or windsurf.
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
}

#[derive(Args)]
pub struct SwitchArgs {
    /// cursor, vscode, claude-desktop or windsurf.
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
}

/// A gateway secret this command minted, revoked again unless the write happened (no unused
/// secret stays registered).
struct Minted<'a> {
    clients: &'a Clients,
    label: Option<String>,
}

impl Minted<'_> {
    fn keep(&mut self) -> Option<String> {
        self.label.take()
    }
}

impl Drop for Minted<'_> {
    fn drop(&mut self) {
        if let Some(label) = self.label.take() {
            if let Err(e) = self.clients.revoke(&label) {
                eprintln!("patchbay: cannot revoke the unused gateway client \"{label}\": {e}");
            }
        }
    }
}

/// What the entry routes through.
struct Routing<'a> {
    patchbay: &'a Patchbay,
    client: Client,
    via: Via,
    port: u16,
    minted: Minted<'a>,
}

impl Routing<'_> {
    /// How the client reaches `connector`. For the gateway: the secret the client's config
    /// already sends when it is still registered and may reach `connector`, else a new one
    /// minted under the client's id (`cursor`, then `cursor-2`, ... when that label belongs to
    /// a secret this config does not hold).
    fn route(&mut self, connector: &str) -> Result<Route> {
        if self.via == Via::Stdio {
            return Ok(Route::Connect {
                command: client_config::current_connect_command(),
            });
        }
        let file = client_config::client_file(self.patchbay, self.client)?;
        let mut secret = None;
        for candidate in write::gateway_secrets(self.client, &file)? {
            let record = self.minted.clients.authenticate(candidate.expose())?;
            if record.is_some_and(|r| r.allows(connector)) {
                secret = Some(candidate);
                break;
            }
        }
        let secret = match secret {
            Some(secret) => secret,
            None => self.mint()?,
        };
        Ok(Route::Gateway {
            url: format!("http://127.0.0.1:{}/mcp/{connector}", self.port),
            headers: vec![(
                "Authorization".into(),
                Secret::new(format!("Bearer {}", secret.expose())),
            )],
        })
    }

    fn mint(&mut self) -> Result<Secret> {
        let base = client_id(self.client);
        for n in 1..=100 {
            let label = match n {
                1 => base.to_owned(),
                n => format!("{base}-{n}"),
            };
            match self.minted.clients.add(&label, None, self.patchbay.now()) {
                Ok((_, secret)) => {
                    self.minted.label = Some(label);
                    return Ok(secret);
                }
                Err(ClientsError::Exists(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        anyhow::bail!("every gateway client label from {base} to {base}-100 is taken")
    }
}

fn client_id(client: Client) -> &'static str {
    client_config::CLIENTS
        .iter()
        .find(|(_, c)| *c == client)
        .map(|(id, _)| *id)
        .unwrap_or("client")
}

pub fn add_to(patchbay: &Patchbay, args: AddToArgs, out: &mut impl Write) -> Result<ExitCode> {
    let client = client_config::parse_client(&args.client)?;
    let conflict = if args.replace {
        Conflict::Replace
    } else {
        Conflict::Refuse
    };
    let clients = Clients::new(&patchbay.paths.data_dir);
    let mut routing = Routing {
        patchbay,
        client,
        via: args.via,
        port: args.port,
        minted: Minted {
            clients: &clients,
            label: None,
        },
    };
    let route = routing.route(&args.name)?;
    let written = client_config::add_to_client(patchbay, client, &args.name, route, conflict)?;
    let minted = routing.minted.keep();
    report(&written, minted.as_deref(), out)?;
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
    let clients = Clients::new(&patchbay.paths.data_dir);
    let mut routing = Routing {
        patchbay,
        client,
        via: args.via,
        port: args.port,
        minted: Minted {
            clients: &clients,
            label: None,
        },
    };
    let mut route_error = None;
    let switched = client_config::switch_to_patchbay(patchbay, client, &server, |name| {
        routing.route(name).map_err(|e| {
            let message = format!("{e:#}");
            route_error = Some(e);
            patchbay_core::CoreError::Invalid(message)
        })
    });
    let switched = match (switched, route_error) {
        (Err(_), Some(e)) => return Err(e),
        (result, _) => result?,
    };
    let minted = routing.minted.keep();
    if switched.managed {
        writeln!(
            out,
            "{} is now managed by Patchbay ({}).",
            one_line(&switched.connector),
            patchbay.writable_catalog().display()
        )?;
    }
    report(&switched.written, minted.as_deref(), out)?;
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

fn report(written: &Written, minted: Option<&str>, out: &mut impl Write) -> Result<()> {
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
    if let Some(label) = minted {
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
    if written.change != Change::Unchanged {
        writeln!(
            out,
            "  Restart {client} (or reload its MCP servers) to pick it up."
        )?;
    }
    Ok(())
}

//! `patchbay gateway serve` runs the loopback MCP gateway headless (servers, CI) until it is
//! interrupted; `patchbay gateway client add|list|revoke` manages the clients allowed through it.
//! Every command is a call into `patchbay_gateway`; this file parses and prints.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use patchbay_core::{Authorizer, AuthorizerOptions, Bridges, Patchbay, RefreshPolicy, Refresher};
use patchbay_gateway::{Clients, Gateway, GatewayOptions, Upstreams, DEFAULT_PORT};
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub struct GatewayArgs {
    #[command(subcommand)]
    command: GatewayCommand,
}

#[derive(Subcommand)]
enum GatewayCommand {
    /// Serve every connector in use at http://127.0.0.1:PORT/mcp/NAME (and [::1]) until
    /// interrupted, with the vault's credentials injected and renewed.
    Serve {
        #[arg(long, value_name = "N", default_value_t = DEFAULT_PORT)]
        port: u16,
    },
    /// The clients allowed through the gateway, each with its own secret.
    Client {
        #[command(subcommand)]
        command: ClientCommand,
    },
}

#[derive(Subcommand)]
enum ClientCommand {
    /// Mint a secret for a new client LABEL and print what the client needs (shown once).
    Add {
        label: String,
        /// Limit the client to these connectors (repeat the flag for several).
        #[arg(long, value_name = "NAME")]
        only: Vec<String>,
        /// The gateway's port, for the URL printed.
        #[arg(long, value_name = "N", default_value_t = DEFAULT_PORT)]
        port: u16,
        /// Print `{"url": ..., "headers": {...}}` for the aggregate endpoint `/mcp`.
        #[arg(long)]
        json: bool,
    },
    /// The clients (labels and limits; never their secrets).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Forget LABEL: its secret stops working at once, also on a running gateway.
    Revoke { label: String },
}

pub fn run(patchbay: Patchbay, args: GatewayArgs, out: &mut impl Write) -> Result<ExitCode> {
    match args.command {
        GatewayCommand::Serve { port } => serve(patchbay, port, out),
        GatewayCommand::Client { command } => client(&patchbay, command, out),
    }
}

fn serve(patchbay: Patchbay, port: u16, out: &mut impl Write) -> Result<ExitCode> {
    // Diagnostics (never a secret) to stderr, `info` unless RUST_LOG says otherwise.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,patchbay_gateway=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let patchbay = Arc::new(patchbay);
        let bridges = Arc::new(Bridges::new(patchbay.clone()));
        let refresher = Refresher::new(
            patchbay.clone(),
            Some(bridges.clone()),
            RefreshPolicy::default(),
        );
        // A step-up or a moved authorization server asks for consent in the browser.
        let authorizer = Authorizer::new(patchbay.clone(), AuthorizerOptions::from_env()?);
        authorizer.set_bridges(bridges);
        let upstreams = Upstreams::new(patchbay, Some(refresher)).with_authorizer(authorizer);
        let gateway = Gateway::bind(
            upstreams,
            GatewayOptions {
                port,
                ..GatewayOptions::default()
            },
        )
        .await?;
        let addresses: Vec<String> = gateway
            .addresses()
            .iter()
            .map(|a| format!("http://{a}"))
            .collect();
        writeln!(
            out,
            "Patchbay gateway listening on {} (connectors at /mcp/NAME). Ctrl-C stops it.",
            addresses.join(" and ")
        )?;
        out.flush()?;
        // Interrupting the process ends it; nothing needs saving on the way out.
        gateway.serve(std::future::pending()).await;
        Ok(ExitCode::SUCCESS)
    })
}

fn client(patchbay: &Patchbay, command: ClientCommand, out: &mut impl Write) -> Result<ExitCode> {
    let clients = Clients::new(&patchbay.paths.data_dir);
    match command {
        ClientCommand::Add {
            label,
            only,
            port,
            json,
        } => {
            let only = (!only.is_empty()).then_some(only);
            let (record, secret) = clients.add(&label, only, patchbay.now())?;
            let base = format!("http://127.0.0.1:{port}");
            let authorization = format!("Bearer {}", secret.expose());
            if json {
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({
                        "url": format!("{base}/mcp"),
                        "headers": { "Authorization": authorization },
                    })
                )?;
            } else {
                writeln!(out, "Gateway client \"{}\" added.", record.label)?;
                writeln!(
                    out,
                    "  URL:    {base}/mcp/NAME (one per connector); {base}/mcp (all)"
                )?;
                writeln!(out, "  Header: Authorization: {authorization}")?;
                if let Some(only) = &record.only {
                    writeln!(out, "  Only:   {}", only.join(", "))?;
                }
                writeln!(
                    out,
                    "The secret is shown only now; Patchbay keeps only its hash."
                )?;
            }
        }
        ClientCommand::List { json } => {
            let list = clients.list()?;
            if json {
                let rows: Vec<serde_json::Value> = list
                    .iter()
                    .map(|c| {
                        serde_json::json!({
                            "label": c.label,
                            "only": c.only,
                            "created_at": c.created_at.to_rfc3339(),
                        })
                    })
                    .collect();
                writeln!(out, "{}", serde_json::Value::Array(rows))?;
            } else if list.is_empty() {
                writeln!(
                    out,
                    "No gateway clients; add one with `patchbay gateway client add LABEL`."
                )?;
            } else {
                for c in &list {
                    let only = match &c.only {
                        Some(only) => format!("only {}", only.join(", ")),
                        None => "every connector".to_owned(),
                    };
                    writeln!(
                        out,
                        "{}  {}  added {}",
                        c.label,
                        only,
                        c.created_at.to_rfc3339()
                    )?;
                }
            }
        }
        ClientCommand::Revoke { label } => {
            clients.revoke(&label)?;
            writeln!(out, "Gateway client \"{label}\" revoked.")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

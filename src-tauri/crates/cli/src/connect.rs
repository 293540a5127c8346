//! `patchbay connect NAME|URL`: the stdio bridge (`patchbay_gateway::stdio`) for MCP clients that
//! only launch commands (Claude Desktop), a drop-in for `npx mcp-remote URL`. This file parses
//! the arguments, sends diagnostics to stderr (stdout carries the protocol only) and starts the
//! bridge with the refresher of record.

use anyhow::{Context, Result};
use clap::Args;
use patchbay_core::{Bridges, Patchbay, RefreshPolicy, Refresher};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub struct ConnectArgs {
    /// The connector's name, or its URL (a client's `npx mcp-remote URL` line works with
    /// `patchbay connect URL`). Patchbay's own options go before it.
    pub target: String,
    /// mcp-remote's own options (`--header`, `--resource`, `--transport`, a callback port, ...)
    /// are accepted and ignored: Patchbay sends the connector's own headers and credential.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub ignored: Vec<String>,
}

/// Diagnostics to stderr only, `info` unless RUST_LOG says otherwise.
fn log_to_stderr() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("warn,patchbay::connect=info,patchbay_gateway=info")
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

pub fn connect(patchbay: Patchbay, args: ConnectArgs) -> Result<ExitCode> {
    log_to_stderr();
    let options: Vec<&str> = args
        .ignored
        .iter()
        .map(String::as_str)
        .filter(|a| a.starts_with("--"))
        .collect();
    if !args.ignored.is_empty() {
        tracing::info!(
            "ignoring mcp-remote's {} (Patchbay sends the connector's own headers and credential)",
            if options.is_empty() {
                "callback port".to_owned()
            } else {
                options.join(", ")
            }
        );
    }
    let patchbay = Arc::new(patchbay);
    let bridges = Arc::new(Bridges::new(patchbay.clone()));
    let refresher = Refresher::new(patchbay.clone(), Some(bridges), RefreshPolicy::default());
    // One thread: one client, one upstream; the smallest footprint per server.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(patchbay_gateway::stdio::serve(
        patchbay,
        Some(refresher),
        &args.target,
    ))?;
    Ok(ExitCode::SUCCESS)
}

//! `patchbay refresh`, `history`, `disconnect` and `runtime-error`: the refresher of record
//! from a terminal. Every command is one call into `patchbay_core::Refresher`; this file parses
//! and prints.

use crate::terminal::one_line;
use anyhow::{Context, Result};
use clap::Args;
use patchbay_core::refresh::{RefreshOutcome, RuntimeReportOutcome};
use patchbay_core::{Bridges, Patchbay, RefreshPolicy, Refresher};
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use crate::RuntimeArg;

#[derive(Args)]
pub struct RefreshArgs {
    /// Refresh this connector now, due or not. Without it: one pass over every credential,
    /// refreshing those that are due (as the app does every 30 minutes).
    pub name: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct HistoryArgs {
    /// The connector whose refresh attempts to list (newest first).
    pub name: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct DisconnectArgs {
    /// The connector to disconnect: its tokens are revoked at the server where it offers
    /// revocation, then removed from the vault and from every runtime.
    pub name: String,
    /// Also forget Patchbay's dynamic client registration with the server.
    #[arg(long)]
    pub forget_registration: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct RuntimeErrorArgs {
    /// The connector the runtime failed on.
    pub name: String,
    /// Which runtime reported it.
    #[arg(long, value_enum)]
    pub runtime: RuntimeArg,
    /// The runtime's error text, e.g. "Token refresh failed with invalid_grant: Invalid refresh
    /// token". A recognized refresh rejection retires the credential everywhere.
    pub message: String,
}

fn refresher(patchbay: Patchbay) -> Refresher {
    let patchbay = Arc::new(patchbay);
    let bridges = Arc::new(Bridges::new(patchbay.clone()));
    Refresher::new(patchbay, Some(bridges), RefreshPolicy::default())
}

fn block_on<F: std::future::Future>(f: F) -> Result<F::Output> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(f))
}

/// Exit 0 when nothing failed, 1 when a refresh failed or was skipped.
pub fn refresh(patchbay: Patchbay, args: RefreshArgs, out: &mut impl Write) -> Result<ExitCode> {
    let refresher = refresher(patchbay);
    match args.name {
        Some(name) => {
            let outcome = block_on(refresher.refresh(&name))??;
            if args.json {
                write_json!(&mut *out, &outcome)?;
            } else {
                writeln!(
                    out,
                    "{}: {}",
                    one_line(&name),
                    one_line(&describe(&outcome))
                )?;
            }
            Ok(exit_for(&[outcome]))
        }
        None => {
            let report = block_on(refresher.pass())??;
            if args.json {
                write_json!(&mut *out, &report)?;
            } else {
                writeln!(
                    out,
                    "{} credentials: {} refreshed, {} adopted from a runtime, {} failed, {} skipped ({} ms)",
                    report.considered,
                    report.refreshed,
                    report.adopted,
                    report.failed,
                    report.skipped,
                    report.elapsed_ms
                )?;
                for r in &report.results {
                    writeln!(
                        out,
                        "  {}: {}",
                        one_line(&r.connector),
                        one_line(&describe(&r.outcome))
                    )?;
                }
            }
            let outcomes: Vec<RefreshOutcome> =
                report.results.into_iter().map(|r| r.outcome).collect();
            Ok(exit_for(&outcomes))
        }
    }
}

fn exit_for(outcomes: &[RefreshOutcome]) -> ExitCode {
    if outcomes.iter().any(|o| {
        matches!(
            o,
            RefreshOutcome::Failed { .. } | RefreshOutcome::Skipped { .. }
        )
    }) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn describe(outcome: &RefreshOutcome) -> String {
    match outcome {
        RefreshOutcome::Refreshed {
            expires_at,
            retries,
        } => {
            let until = expires_at
                .map(|t| format!("; valid until {}", t.format("%Y-%m-%d %H:%M UTC")))
                .unwrap_or_default();
            let retried = match retries {
                0 => String::new(),
                n => format!(" after {n} retries"),
            };
            format!("refreshed{retried}{until}")
        }
        RefreshOutcome::Adopted { runtime } => format!(
            "adopted the newer pair {} rotated (no refresh needed)",
            runtime.display_name()
        ),
        RefreshOutcome::NotDue => "not due".into(),
        RefreshOutcome::Skipped { reason } => format!("skipped: {reason}"),
        RefreshOutcome::Failed { class, summary, .. } => {
            format!("failed ({}): {summary}", class.id())
        }
    }
}

pub fn history(patchbay: Patchbay, args: HistoryArgs, out: &mut impl Write) -> Result<ExitCode> {
    let attempts = refresher(patchbay).history(&args.name)?;
    if args.json {
        write_json!(&mut *out, &attempts)?;
        return Ok(ExitCode::SUCCESS);
    }
    if attempts.is_empty() {
        writeln!(out, "{}: no refresh attempts yet", one_line(&args.name))?;
    }
    for a in &attempts {
        let status = a
            .http_status
            .map(|s| format!(" HTTP {s}"))
            .unwrap_or_default();
        let retries = match a.retries {
            0 => String::new(),
            n => format!(", {n} retries"),
        };
        writeln!(
            out,
            "{}  {}{status}{retries}  {}",
            a.at.format("%Y-%m-%d %H:%M:%S UTC"),
            one_line(&a.outcome),
            one_line(&a.summary)
        )?;
        if let Some(detail) = &a.detail {
            let line: String = detail.chars().take(200).collect();
            writeln!(out, "    {}", one_line(&line))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn disconnect(
    patchbay: Patchbay,
    args: DisconnectArgs,
    out: &mut impl Write,
) -> Result<ExitCode> {
    let done = block_on(refresher(patchbay).disconnect(&args.name, args.forget_registration))??;
    if args.json {
        write_json!(&mut *out, &done)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "Disconnected {}.", one_line(&done.connector))?;
    match (done.revoked, &done.revocation_error) {
        (Some(true), _) if done.still_valid.is_empty() => {
            writeln!(out, "  The server revoked its tokens.")?
        }
        (Some(true), _) => {
            for kept in &done.still_valid {
                let token = kept.token.replace('_', " ");
                let until = match kept.until {
                    Some(at) => format!("until {}", at.format("%Y-%m-%d %H:%M UTC")),
                    None => "until it expires".to_owned(),
                };
                writeln!(
                    out,
                    "  The server cannot revoke the {token} (unsupported_token_type): it stays valid at the server {until}, though it is gone from this machine."
                )?;
            }
            if !done.still_valid.iter().any(|t| t.token == "refresh_token") {
                writeln!(
                    out,
                    "  The refresh token was revoked: nothing can renew it."
                )?;
            }
        }
        (Some(false), Some(e)) => writeln!(
            out,
            "  The server did not confirm the revocation ({}); the tokens were removed anyway.",
            one_line(&e.to_string())
        )?,
        _ => writeln!(
            out,
            "  The server offers no revocation; the tokens were removed from this machine."
        )?,
    }
    for runtime in &done.removed_from {
        writeln!(out, "  Removed from {}.", runtime.display_name())?;
    }
    if done.registration_forgotten {
        writeln!(out, "  Forgot the client registration.")?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn runtime_error(
    patchbay: Patchbay,
    args: RuntimeErrorArgs,
    out: &mut impl Write,
) -> Result<ExitCode> {
    let runtime = args.runtime.into();
    match refresher(patchbay).runtime_reported(&args.name, runtime, &args.message)? {
        RuntimeReportOutcome::Retired => {
            writeln!(
                out,
                "{} rejected the refresh token: {} is retired everywhere; authorize it again with `patchbay authorize {}`.",
                runtime.display_name(),
                one_line(&args.name),
                one_line(&args.name)
            )?;
            Ok(ExitCode::SUCCESS)
        }
        RuntimeReportOutcome::NotRecognized => {
            writeln!(
                out,
                "Not a refresh-token rejection Patchbay recognizes; nothing changed (retry the runtime)."
            )?;
            Ok(ExitCode::from(1))
        }
    }
}

//! `patchbay connect NAME|URL`: the stdio bridge (`patchbay_gateway::stdio`) for MCP clients that
//! only launch commands (Claude Desktop), a drop-in for `npx mcp-remote URL`. This file parses
//! the arguments, sends diagnostics to stderr (stdout carries the protocol only), resolves the
//! connector, and then, on Unix, hands it over a pipe to `patchbay-bridge` (beside this binary),
//! exec'd in this process's place so the long-lived bridge holds none of the catalog, clients or
//! vault in memory; elsewhere, or without that binary, it bridges in this process.
//! `connect --renew NAME` is the lean bridge's way back to the refresher of record. When a
//! gateway (the app's, or `gateway serve`) serves the same data directory, both ask it instead
//! (`patchbay_gateway::bridge_socket`) and never open the keychain here; the vault is the
//! fallback when none answers.

use anyhow::{Context, Result};
use clap::Args;
use patchbay_core::{Authorizer, AuthorizerOptions, Bridges, RefreshPolicy, Refresher};
#[cfg(unix)]
use patchbay_gateway::bridge_socket::{Answer, Request, RENEW_TIMEOUT, RESOLVE_TIMEOUT};
use patchbay_gateway::Upstreams;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub struct ConnectArgs {
    /// The connector's name, or its URL (a client's `npx mcp-remote URL` line works with
    /// `patchbay connect URL`). Patchbay's own options go before it.
    pub target: String,
    /// Internal: renew NAME's credential for a running bridge (the refused bearer on stdin, one
    /// JSON line on stdout).
    #[arg(long, hide = true)]
    pub renew: bool,
    /// mcp-remote's own options (`--header`, `--resource`, `--transport`, a callback port, ...)
    /// are accepted and ignored: Patchbay sends the connector's own headers and credential.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub ignored: Vec<String>,
}

/// Diagnostics to stderr only, `info` unless RUST_LOG says otherwise.
pub fn log_to_stderr() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(
            "warn,patchbay::connect=info,patchbay_bridge=info,patchbay_gateway=info",
        )
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

pub fn connect(
    data_dir: Option<PathBuf>,
    catalog: Option<PathBuf>,
    args: ConnectArgs,
) -> Result<ExitCode> {
    log_to_stderr();
    // One thread: one client, one upstream.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    if args.renew {
        // The refused bearer and a step-up's scope, one line each (the lean bridge's request).
        let [refused, scope] = [(), ()].map(|()| {
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            Some(line.trim().to_owned()).filter(|l| !l.is_empty())
        });
        #[cfg(unix)]
        {
            let request = Request::Renew {
                target: args.target.clone(),
                catalog: absolute_catalog(&catalog),
                refused: refused.clone(),
                scope: scope.clone(),
            };
            if let Some(Answer::Renewed(line)) = ask_the_gateway(&data_dir, &request, RENEW_TIMEOUT)
            {
                println!("{line}");
                return Ok(ExitCode::SUCCESS);
            }
        }
        let upstream = upstreams(&data_dir, &catalog, true)?.resolve(&args.target);
        let refused = refused.map(patchbay_vault::Secret::new);
        let line = runtime.block_on(patchbay_gateway::stdio::renewal(
            upstream,
            refused.as_ref(),
            scope.as_deref().unwrap_or_default(),
        ));
        println!("{line}");
        return Ok(ExitCode::SUCCESS);
    }
    note_ignored(&args.ignored);

    // The gateway running beside this bridge (the app's, or `gateway serve`) resolves the
    // connector when it serves this data directory: the keychain is then never opened here.
    #[cfg(unix)]
    {
        let request = Request::Resolve {
            target: args.target.clone(),
            catalog: absolute_catalog(&catalog),
        };
        match ask_the_gateway(&data_dir, &request, RESOLVE_TIMEOUT) {
            Some(Answer::Resolved(mut handoff)) => {
                tracing::info!(
                    connector = handoff.connector,
                    "resolved by the running gateway (the keychain is not opened here)"
                );
                handoff.renew = renew_command(&data_dir, &catalog, &handoff.connector)?;
                if hands_off() {
                    hand_over(&handoff);
                }
                runtime.block_on(patchbay_gateway::stdio::run_handoff(*handoff))?;
                return Ok(ExitCode::SUCCESS);
            }
            Some(Answer::Refused { reason, message }) => {
                return refuse(&runtime, &args.target, &message, &reason);
            }
            // Another catalog, or no gateway: resolved here, from the vault.
            Some(Answer::NotMine | Answer::Renewed(_)) | None => {}
        }
    }
    let started = upstreams(&data_dir, &catalog, !hands_off()).and_then(|upstreams| {
        let patchbay = upstreams.patchbay().clone();
        Ok((patchbay, upstreams.resolve(&args.target)?))
    });
    let (patchbay, upstream) = match started {
        Ok(started) => started,
        // The client launched this process and waits for an answer: it gets one, in JSON-RPC,
        // to every request until it hangs up (an exit would read as "connection closed").
        Err(e) => {
            let reason = e
                .downcast_ref::<patchbay_gateway::UpstreamError>()
                .map_or("cannot_start", patchbay_gateway::UpstreamError::reason);
            return refuse(&runtime, &args.target, &format!("{e:#}"), reason);
        }
    };

    #[cfg(unix)]
    if hands_off() {
        let renew = renew_command(&data_dir, &catalog, upstream.name())?;
        let health = patchbay_gateway::stdio::health_file(&patchbay);
        hand_over(&patchbay_gateway::stdio::Handoff::new(
            &upstream,
            renew,
            Some(health),
        ));
    }
    runtime.block_on(patchbay_gateway::stdio::serve_upstream(&patchbay, upstream))?;
    Ok(ExitCode::SUCCESS)
}

/// The client waits for an answer: every request it sends gets Patchbay's JSON-RPC error (`why`,
/// with `reason` as its data) until it hangs up; exit 2. An exit would read as "connection
/// closed".
fn refuse(
    runtime: &tokio::runtime::Runtime,
    target: &str,
    why: &str,
    reason: &str,
) -> Result<ExitCode> {
    let message = format!("Patchbay cannot connect to {target}: {why}");
    eprintln!("patchbay: {message}");
    let stdout = patchbay_gateway::stdio::stdout_handle()?;
    runtime.block_on(patchbay_gateway::stdio::refuse_session(
        &message,
        reason,
        tokio::io::stdin(),
        stdout,
    ))?;
    Ok(ExitCode::from(2))
}

/// Exec the lean bridge with `handoff`, when it is beside this binary. Returns only when there
/// is none or the exec failed: then the caller bridges in this process.
#[cfg(unix)]
fn hand_over(handoff: &patchbay_gateway::stdio::Handoff) {
    if let Some(bridge) = lean_bridge() {
        let e = exec_lean_bridge(&bridge, handoff);
        tracing::warn!(
            "cannot start {} ({e:#}); bridging in this process",
            bridge.display()
        );
    }
}

/// Patchbay opened, and the upstreams it reaches, renewing through the refresher of record.
/// What renewing cannot mend (a new authorization server, a step-up) is authorized in the
/// browser while the request waits, as mcp-remote does: whoever launched this bridge is at the
/// desktop. Only a process that bridges or renews (`asks`) gets the Authorizer: one that hands
/// the session over to the lean bridge does neither, and skips its start (a sweep of the
/// vault's flows). A bad setting must not end the bridge before the client hears from it.
fn upstreams(
    data_dir: &Option<PathBuf>,
    catalog: &Option<PathBuf>,
    asks: bool,
) -> Result<Upstreams> {
    let patchbay = Arc::new(crate::open(data_dir.clone(), catalog.clone())?);
    let bridges = Arc::new(Bridges::new(patchbay.clone()));
    let refresher = Refresher::new(
        patchbay.clone(),
        Some(bridges.clone()),
        RefreshPolicy::default(),
    );
    let mut upstreams = Upstreams::new(patchbay.clone(), Some(refresher));
    if asks {
        let authorizer = Authorizer::new(patchbay, AuthorizerOptions::from_env_or_default());
        authorizer.set_bridges(bridges);
        upstreams = upstreams.with_authorizer(authorizer);
    }
    Ok(upstreams)
}

/// The answer of the gateway serving this data directory, when one does (`None` also when the
/// data directory cannot be told: the bridge then fails, or not, on its own).
#[cfg(unix)]
fn ask_the_gateway(
    data_dir: &Option<PathBuf>,
    request: &Request,
    within: std::time::Duration,
) -> Option<Answer> {
    let paths = patchbay_core::Paths::resolve(data_dir.clone()).ok()?;
    patchbay_gateway::bridge_socket::ask(&paths.data_dir, request, within)
}

/// `--catalog` as the gateway compares it (its own is absolute; this process's directory is
/// not the gateway's).
#[cfg(unix)]
fn absolute_catalog(catalog: &Option<PathBuf>) -> Option<PathBuf> {
    catalog
        .as_ref()
        .map(|c| std::path::absolute(c).unwrap_or_else(|_| c.clone()))
}

/// Whether this process hands the session to the lean bridge rather than bridging itself.
fn hands_off() -> bool {
    #[cfg(unix)]
    {
        std::env::var_os("PATCHBAY_CONNECT_IN_PROCESS").is_none() && lean_bridge().is_some()
    }
    #[cfg(not(unix))]
    {
        false
    }
}

fn note_ignored(ignored: &[String]) {
    if ignored.is_empty() {
        return;
    }
    let options: Vec<&str> = ignored
        .iter()
        .map(String::as_str)
        .filter(|a| a.starts_with("--"))
        .collect();
    tracing::info!(
        "ignoring mcp-remote's {} (Patchbay sends the connector's own headers and credential)",
        if options.is_empty() {
            "callback port".to_owned()
        } else {
            options.join(", ")
        }
    );
}

/// `patchbay-bridge` beside this binary (beside the file a link such as
/// `/opt/homebrew/bin/patchbay` points to, or beside the link), when it is there.
#[cfg(unix)]
fn lean_bridge() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let name = format!("patchbay-bridge{}", std::env::consts::EXE_SUFFIX);
    [std::fs::canonicalize(&exe).ok(), Some(exe)]
        .into_iter()
        .flatten()
        .map(|e| e.with_file_name(&name))
        .find(|bridge| bridge.is_file())
}

/// `patchbay [--data-dir D] [--catalog C] connect --renew NAME`, paths absolute.
#[cfg(unix)]
fn renew_command(
    data_dir: &Option<PathBuf>,
    catalog: &Option<PathBuf>,
    name: &str,
) -> Result<Vec<String>> {
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let mut command = vec![exe.display().to_string()];
    for (flag, path) in [("--data-dir", data_dir), ("--catalog", catalog)] {
        if let Some(path) = path {
            command.push(flag.into());
            command.push(std::path::absolute(path)?.display().to_string());
        }
    }
    command.extend(["connect".into(), "--renew".into(), name.into()]);
    Ok(command)
}

/// Writes `handoff` into a pipe whose read end survives the exec, then execs the lean bridge
/// with that descriptor. Returns only on failure.
#[cfg(unix)]
fn exec_lean_bridge(
    bridge: &std::path::Path,
    handoff: &patchbay_gateway::stdio::Handoff,
) -> anyhow::Error {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let attempt = || -> Result<std::convert::Infallible> {
        let (reader, mut writer) = std::io::pipe().context("cannot make a pipe")?;
        // Small (a few hundred bytes): fits the pipe's buffer, so writing before the exec
        // cannot block.
        let json = serde_json::to_vec(handoff)?;
        writer.write_all(&json)?;
        drop(writer);
        rustix::io::fcntl_setfd(&reader, rustix::io::FdFlags::empty())
            .context("cannot pass the pipe on")?;
        let fd = reader.as_raw_fd();
        let e = std::process::Command::new(bridge)
            .arg("--handoff-fd")
            .arg(fd.to_string())
            .exec();
        Err(e.into())
    };
    match attempt() {
        Ok(never) => match never {},
        Err(e) => e,
    }
}

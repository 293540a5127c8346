//! `patchbay check [NAME] [--json] [--write-back]`: test connectors for real (the MCP handshake
//! and `tools/list`), record the result on the health board, and, with `--write-back`, save a
//! transport that answered after the configured one was rejected to the user catalog.
//! Exit codes as `status`: 0 every check passed, 1 something needs attention, 2 error, and 2
//! when nothing could be checked at all (every connector skipped, or none in the catalog).

use crate::terminal::one_line;
use anyhow::{bail, Context, Result};
use patchbay_core::check::{ConnectorCheck, WrittenBack};
use patchbay_core::{Bridges, Checker, CheckerOptions, Patchbay, RefreshPolicy, Refresher};
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The connector to check; every connector in the catalog when omitted.
    pub name: Option<String>,
    /// Print JSON (`{ "version", "checks": [...], "written_back": [...] }`) instead of text.
    #[arg(long)]
    pub json: bool,
    /// When the configured HTTP transport was rejected and the other one answered, write the
    /// one that answered to the user catalog (every other key kept).
    #[arg(long)]
    pub write_back: bool,
}

/// Bumped when a field is removed or changes meaning.
const CHECK_JSON_VERSION: u32 = 1;

pub fn run(patchbay: Patchbay, args: CheckArgs, out: &mut impl Write) -> Result<ExitCode> {
    let patchbay = Arc::new(patchbay);
    let core = patchbay.clone();
    // A lapsed but renewable token is refreshed first, as the app does.
    let refresher = Refresher::new(
        patchbay.clone(),
        Some(Arc::new(Bridges::new(patchbay.clone()))),
        RefreshPolicy::default(),
    );
    let checker = Checker::new(patchbay, CheckerOptions::default())?.with_refresher(refresher);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let checks = runtime.block_on(async {
        match &args.name {
            Some(name) => checker.check(name).await.map(|c| vec![c]),
            None => checker.check_all().await,
        }
    })?;
    // Stop what the checks left running (a streamable-HTTP session's goodbye) before exiting.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));

    let mut written = Vec::new();
    if args.write_back {
        for check in &checks {
            if let Some(transport) = check.fell_back_to {
                written.push(checker.write_back(&check.connector, transport)?);
            }
        }
    }

    if args.json {
        let doc = serde_json::json!({
            "version": CHECK_JSON_VERSION,
            "checks": checks,
            "written_back": written,
        });
        write_json!(&mut *out, &doc)?;
    } else {
        for (i, check) in checks.iter().enumerate() {
            if i > 0 {
                writeln!(out)?;
            }
            write_check(out, check, args.write_back)?;
        }
        for w in &written {
            write_written(out, w)?;
        }
    }
    if checks.iter().all(|c| c.skipped.is_some()) {
        out.flush()?;
        bail!("{}", nothing_checked(&core, &checks));
    }
    let attention = checks
        .iter()
        .any(|c| !c.ok && (c.skipped.is_none() || c.action.is_some()));
    Ok(if attention {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Why no connector was contacted: the vault when it cannot be read (said once), then each
/// connector's reason.
fn nothing_checked(patchbay: &Patchbay, checks: &[ConnectorCheck]) -> String {
    if checks.is_empty() {
        // The gallery's connectors are not the user's: none of them is checked until it is in use.
        let (catalog, in_use) = patchbay.catalog_in_use();
        let gallery = catalog
            .servers()
            .filter(|e| !in_use.contains(e.name.as_str()))
            .count();
        return match gallery {
            0 => "nothing was checked: no connector is in use and the catalog offers none".into(),
            offered => format!(
                "nothing was checked: no connector is in use; `patchbay gallery` lists the \
                 {offered} the catalog offers, `patchbay enable NAME` puts one in use"
            ),
        };
    }
    let mut why = String::from("nothing was checked");
    if let Err(e) = patchbay.vault().check_store() {
        why.push_str(&format!("; the vault cannot be read: {e}"));
    }
    let reasons: Vec<String> = checks
        .iter()
        .map(|c| {
            format!(
                "{}: {}",
                c.connector,
                c.skipped.as_deref().unwrap_or("skipped")
            )
        })
        .collect();
    why.push_str(&format!(
        "; every connector was skipped ({})",
        reasons.join("; ")
    ));
    why
}

fn write_check(out: &mut impl Write, c: &ConnectorCheck, write_back: bool) -> Result<()> {
    let name = &one_line(&c.connector);
    if let Some(reason) = &c.skipped {
        writeln!(out, "{name}: skipped ({})", one_line(reason))?;
        if let (Some(advice), Some(_)) = (&c.advice, c.action) {
            writeln!(out, "  {}", one_line(advice))?;
        }
        return Ok(());
    }
    let transport = c.transport.map(|t| t.as_str()).unwrap_or("?");
    if c.ok {
        let server = c
            .server
            .as_ref()
            .map(|s| {
                let protocol = one_line(&s.protocol_version);
                // A 2026-07-28 server need not name itself: then only the revision is shown.
                let who = format!("{} {}", one_line(&s.name), one_line(&s.version));
                match who.trim() {
                    "" => format!(", protocol {protocol}"),
                    who => format!(", {who} (protocol {protocol})"),
                }
            })
            .unwrap_or_default();
        writeln!(
            out,
            "{name}: ok over {transport} in {} ms{server}",
            c.latency_ms.unwrap_or(0)
        )?;
        if let (Some(t), Some(configured)) = (c.fell_back_to, c.configured_transport) {
            if write_back {
                writeln!(
                    out,
                    "  fell back to {} ({configured} was rejected)",
                    t.label()
                )?;
            } else {
                writeln!(
                    out,
                    "  fell back to {} ({configured} was rejected); run `patchbay check {name} --write-back` to save it to your catalog",
                    t.label()
                )?;
            }
        }
        if c.tools.is_empty() {
            writeln!(out, "  tools: none")?;
        } else {
            let names: Vec<String> = c.tools.iter().map(|t| one_line(&t.name)).collect();
            writeln!(out, "  tools: {}", names.join(", "))?;
        }
    } else {
        writeln!(out, "{name}: FAILED over {transport}")?;
        if let Some(e) = &c.error {
            writeln!(out, "  error: {}", one_line(&e.message))?;
        }
        for a in c
            .attempts
            .iter()
            .filter(|a| Some(a.transport) != c.transport)
        {
            if let Some(e) = &a.error {
                writeln!(
                    out,
                    "  also tried {}: {}",
                    a.transport,
                    one_line(&e.message)
                )?;
            }
        }
        if let Some(advice) = &c.advice {
            writeln!(out, "  {}", one_line(advice))?;
        }
        match &c.degraded {
            Some(d) => writeln!(
                out,
                "  degraded since {}: agents are told it is unavailable until a check passes",
                d.since.format("%Y-%m-%d %H:%M:%S UTC")
            )?,
            None if c.consecutive_failures > 0 => writeln!(
                out,
                "  {} failure{} in a row (degraded at 3, counted with backing off between)",
                c.consecutive_failures,
                if c.consecutive_failures == 1 { "" } else { "s" }
            )?,
            None => {}
        }
    }
    let h = &c.health;
    let ms = |v: Option<u64>| v.map(|v| format!("{v} ms")).unwrap_or_else(|| "-".into());
    writeln!(
        out,
        "  health: {} check{}, {:.0}% failed, p50 {}, p95 {}",
        h.calls,
        if h.calls == 1 { "" } else { "s" },
        h.fail_rate * 100.0,
        ms(h.p50_ms),
        ms(h.p95_ms)
    )?;
    Ok(())
}

fn write_written(out: &mut impl Write, w: &WrittenBack) -> Result<()> {
    writeln!(
        out,
        "Wrote {} as {}'s transport to {}.",
        w.transport,
        one_line(&w.connector),
        w.file.display()
    )?;
    if let Some((from, to)) = &w.credential_moved {
        writeln!(
            out,
            "Its stored credential is now filed under {to} (was {from}), the key the new transport computes."
        )?;
    }
    Ok(())
}
